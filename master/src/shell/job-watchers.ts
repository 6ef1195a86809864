/**
 * WatchJob subscribers: each open stream gets the job's record whenever it changes (deduplicated
 * by content) and ends once the job is finished. A reader that falls `maxQueued` messages behind
 * (packages/rpc stream-bounds.ts) is ended with RESOURCE_EXHAUSTED: it watches again and gets the
 * current records first, so nothing is lost and nothing piles up in the master.
 */
import type { ServerWritableStream } from '@grpc/grpc-js';
import type { JobInfo } from '@fuxi/proto';
import { DEFAULT_STREAM_MAX_QUEUED, endExhausted, queueFull } from '@fuxi/rpc';
import { TERMINAL_STATES, type JobRecord } from '../core/types.js';
import { jobInfo } from './wire.js';

type Watcher = (j: JobRecord) => void;

export class JobWatchers {
  private readonly byJob = new Map<string, Set<Watcher>>();

  constructor(private readonly maxQueued = DEFAULT_STREAM_MAX_QUEUED) {}

  /** Streams `first`, then every change `notify` brings, until the job ends or the caller leaves. */
  serve(first: JobRecord, call: ServerWritableStream<unknown, JobInfo>): Promise<void> {
    const jobId = first.jobId;
    return new Promise<void>((resolve) => {
      let last = '';
      const set = this.byJob.get(jobId) ?? new Set<Watcher>();
      this.byJob.set(jobId, set);
      let ended = false;
      const done = (overflow = false) => {
        if (ended) return;
        ended = true;
        set.delete(send);
        if (set.size === 0 && this.byJob.get(jobId) === set) this.byJob.delete(jobId);
        if (overflow) endExhausted(call, 'WatchJob', this.maxQueued);
        else call.end();
        resolve();
      };
      const send = (j: JobRecord) => {
        const info = jobInfo(j);
        const text = JSON.stringify(info);
        if (text !== last) {
          if (queueFull(call, this.maxQueued)) return done(true);
          last = text;
          call.write(info);
        }
        if (TERMINAL_STATES.has(j.state)) done();
      };
      call.on('cancelled', () => done());
      set.add(send);
      send(first);
    });
  }

  /**
   * One stream for many jobs: each one's record first, then every change (only terminal states with
   * `endsOnly`), until all of them are terminal or the caller leaves. One subscription per job,
   * so a change costs the same whoever else is watched.
   */
  serveMany(first: readonly JobRecord[], call: ServerWritableStream<unknown, JobInfo>, endsOnly = false): Promise<void> {
    return new Promise<void>((resolve) => {
      const last = new Map<string, string>();
      const open = new Set(first.filter((j) => !TERMINAL_STATES.has(j.state)).map((j) => j.jobId));
      const subs: Array<[string, Set<Watcher>]> = [];
      let ended = false;
      // While the first records go out, the stream neither ends (every one of them goes, ended jobs
      // included) nor counts them against its bound (the caller asked for that many).
      let initial = true;
      const bound = this.maxQueued + first.length;
      const done = (overflow = false) => {
        if (ended) return;
        ended = true;
        for (const [jobId, set] of subs) {
          set.delete(send);
          if (set.size === 0 && this.byJob.get(jobId) === set) this.byJob.delete(jobId);
        }
        if (overflow) endExhausted(call, 'WatchJobs', this.maxQueued);
        else call.end();
        resolve();
      };
      const send = (j: JobRecord) => {
        const terminal = TERMINAL_STATES.has(j.state);
        if (!endsOnly || terminal) {
          const info = jobInfo(j);
          const text = JSON.stringify(info);
          if (text !== last.get(j.jobId)) {
            if (!initial && queueFull(call, bound)) return done(true);
            last.set(j.jobId, text);
            call.write(info);
          }
        }
        if (terminal) open.delete(j.jobId);
        if (open.size === 0 && !initial) done();
      };
      call.on('cancelled', () => done());
      for (const jobId of open) {
        const set = this.byJob.get(jobId) ?? new Set<Watcher>();
        this.byJob.set(jobId, set);
        set.add(send);
        subs.push([jobId, set]);
      }
      for (const j of first) if (!ended) send(j);
      initial = false;
      if (open.size === 0) done();
    });
  }

  /** The job changed: every watcher of it gets `job`. */
  notify(job: JobRecord): void {
    const set = this.byJob.get(job.jobId);
    if (!set) return;
    for (const w of [...set]) w(job);
  }

  has(jobId: string): boolean {
    return (this.byJob.get(jobId)?.size ?? 0) > 0;
  }

  /** Forgets every watcher (a deposed leader; their streams end with the redirect of the next call). */
  clear(): void {
    for (const set of this.byJob.values()) set.clear();
    this.byJob.clear();
  }
}
