/**
 * WatchJob subscribers: each open stream gets the job's record whenever it changes (deduplicated
 * by content) and ends once the job is finished. A reader that falls `maxQueued` messages behind
 * (packages/rpc stream-bounds.ts) is ended with RESOURCE_EXHAUSTED: it watches again and gets the
 * current records first, so nothing is lost and nothing piles up in the master.
 *
 * Nothing goes out before the store has it. A change is taken as `JobNews` when the core makes it
 * (the record itself changes in place afterwards) and given to `notify` once the writes queued with
 * it are durable (master-server.ts, `jobChanged`). A stream's first records are taken when it opens
 * and held until `ready` (the writes queued before it) is durable; changes that arrive meanwhile
 * wait behind them. If `ready` fails (the term ended: a write failed, or leadership was lost), the
 * stream ends with that error having shown nothing: a job whose submit was still being written may
 * not exist once the master has rebuilt from the store. A term's end (`clear`) ends every open
 * stream with UNAVAILABLE, and its client watches again.
 */
import type { ServerWritableStream } from '@grpc/grpc-js';
import type { JobInfo } from '@fuxi/proto';
import { DEFAULT_STREAM_MAX_QUEUED, endExhausted, queueFull } from '@fuxi/rpc';
import { TERMINAL_STATES, type JobRecord } from '../core/types.js';
import { jobInfo } from './wire.js';

/** A job's record as watchers receive it, taken when it changed; made once for all of them. */
export interface JobNews {
  readonly jobId: string;
  readonly info: JobInfo;
  /** `info` as JSON: how a stream tells a change from a repeat. */
  readonly text: string;
  readonly terminal: boolean;
}

/** The record as it is now. */
export function jobNews(j: JobRecord): JobNews {
  const info = jobInfo(j);
  return { jobId: j.jobId, info, text: JSON.stringify(info), terminal: TERMINAL_STATES.has(j.state) };
}

type Watcher = (n: JobNews) => void;

/**
 * The watcher to register for a stream that opens once `ready` is durable: until then changes wait
 * in order; then `first` runs and they follow. If `ready` fails, `fail` runs instead and they are
 * dropped. Without `ready`, `first` runs at once.
 */
function opening(ready: Promise<void> | undefined, first: () => void, send: Watcher, fail: (err: unknown) => void): Watcher {
  if (!ready) {
    first();
    return send;
  }
  let waiting: JobNews[] | undefined = [];
  ready.then(
    () => {
      const queued = waiting ?? [];
      waiting = undefined;
      first();
      for (const n of queued) send(n);
    },
    (err: unknown) => {
      waiting = undefined;
      fail(err);
    },
  );
  return (n) => {
    if (waiting) waiting.push(n);
    else send(n);
  };
}

export class JobWatchers {
  private readonly byJob = new Map<string, Set<Watcher>>();
  /** How to cut each open stream short (`clear`). */
  private readonly open = new Set<(err: unknown) => void>();

  constructor(private readonly maxQueued = DEFAULT_STREAM_MAX_QUEUED) {}

  /**
   * Streams `first`, then every change `notify` brings, until the job ends or the caller leaves.
   * Nothing goes before `ready`; if it fails, so does the returned promise, with its error.
   */
  serve(first: JobRecord, call: ServerWritableStream<unknown, JobInfo>, ready?: Promise<void>): Promise<void> {
    const firstNews = jobNews(first);
    return new Promise<void>((resolve, reject) => {
      let last = '';
      const sub = this.subscription([first.jobId], reject);
      const done = (overflow = false) => {
        if (!sub.end()) return;
        if (overflow) endExhausted(call, 'WatchJob', this.maxQueued);
        else call.end();
        resolve();
      };
      const send = (n: JobNews) => {
        if (sub.ended) return;
        if (n.text !== last) {
          if (queueFull(call, this.maxQueued)) return done(true);
          last = n.text;
          call.write(n.info);
        }
        if (n.terminal) done();
      };
      call.on('cancelled', () => done());
      sub.start(opening(ready, () => send(firstNews), send, sub.cut));
    });
  }

  /**
   * One stream for many jobs: each one's record first, then every change (only terminal states with
   * `endsOnly`), until all of them are terminal or the caller leaves. One subscription per job,
   * so a change costs the same whoever else is watched. Nothing goes before `ready`, as in `serve`.
   */
  serveMany(first: readonly JobRecord[], call: ServerWritableStream<unknown, JobInfo>, endsOnly = false, ready?: Promise<void>): Promise<void> {
    const firstNews = first.map(jobNews);
    return new Promise<void>((resolve, reject) => {
      const last = new Map<string, string>();
      const open = new Set(firstNews.filter((n) => !n.terminal).map((n) => n.jobId));
      const sub = this.subscription([...open], reject);
      // While the first records go out, the stream neither ends (every one of them goes, ended jobs
      // included) nor counts them against its bound (the caller asked for that many).
      let initial = true;
      const bound = this.maxQueued + first.length;
      const done = (overflow = false) => {
        if (!sub.end()) return;
        if (overflow) endExhausted(call, 'WatchJobs', this.maxQueued);
        else call.end();
        resolve();
      };
      const send = (n: JobNews) => {
        if (sub.ended) return;
        if (!endsOnly || n.terminal) {
          if (n.text !== last.get(n.jobId)) {
            if (!initial && queueFull(call, bound)) return done(true);
            last.set(n.jobId, n.text);
            call.write(n.info);
          }
        }
        if (n.terminal) open.delete(n.jobId);
        if (open.size === 0 && !initial) done();
      };
      const sendFirst = () => {
        for (const n of firstNews) send(n);
        initial = false;
        if (open.size === 0) done();
      };
      call.on('cancelled', () => done());
      sub.start(opening(ready, sendFirst, send, sub.cut));
    });
  }

  /**
   * One stream's place among the watchers of `jobIds`: `start` registers its watcher (unless the
   * stream has ended meanwhile: its first record was terminal); `end` removes it, once; `cut` ends
   * it with an error for `fail` (its `ready` failed, or `clear`).
   */
  private subscription(
    jobIds: readonly string[],
    fail: (err: unknown) => void,
  ): { start(w: Watcher): void; end(): boolean; cut(err: unknown): void; readonly ended: boolean } {
    let watcher: Watcher | undefined;
    let ended = false;
    const end = (): boolean => {
      if (ended) return false;
      ended = true;
      this.open.delete(cut);
      if (watcher) {
        for (const jobId of jobIds) {
          const set = this.byJob.get(jobId);
          if (!set) continue;
          set.delete(watcher);
          if (set.size === 0) this.byJob.delete(jobId);
        }
      }
      return true;
    };
    const cut = (err: unknown) => {
      if (end()) fail(err);
    };
    this.open.add(cut);
    return {
      get ended() {
        return ended;
      },
      start: (w) => {
        if (ended) return;
        watcher = w;
        for (const jobId of jobIds) {
          const set = this.byJob.get(jobId) ?? new Set<Watcher>();
          this.byJob.set(jobId, set);
          set.add(w);
        }
      },
      end,
      cut,
    };
  }

  /** The job changed (`news` taken then): every watcher of it gets it. */
  notify(news: JobNews): void {
    const set = this.byJob.get(news.jobId);
    if (!set) return;
    for (const w of [...set]) w(news);
  }

  has(jobId: string): boolean {
    return (this.byJob.get(jobId)?.size ?? 0) > 0;
  }

  /**
   * The term ended (or the master stops): every open stream ends with `answer` (UNAVAILABLE), so
   * its client watches again, at the next leader or at this one's next term, and gets the records
   * as that term has them. A stream left open would hear of nothing more: a later term's changes
   * go to the watchers registered in it.
   */
  clear(answer: Error): void {
    for (const cut of [...this.open]) cut(answer);
    this.open.clear();
    for (const set of this.byJob.values()) set.clear();
    this.byJob.clear();
  }
}
