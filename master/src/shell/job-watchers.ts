/**
 * WatchJob subscribers: each open stream gets the job's record whenever it changes (deduplicated
 * by content) and ends once the job is finished.
 */
import type { ServerWritableStream } from '@grpc/grpc-js';
import type { JobInfo } from '@fuxi/proto';
import { TERMINAL_STATES, type JobRecord } from '../core/types.js';
import { jobInfo } from './wire.js';

type Watcher = (j: JobRecord) => void;

export class JobWatchers {
  private readonly byJob = new Map<string, Set<Watcher>>();

  /** Streams `first`, then every change `notify` brings, until the job ends or the caller leaves. */
  serve(first: JobRecord, call: ServerWritableStream<unknown, JobInfo>): Promise<void> {
    const jobId = first.jobId;
    return new Promise<void>((resolve) => {
      let last = '';
      const set = this.byJob.get(jobId) ?? new Set<Watcher>();
      this.byJob.set(jobId, set);
      const done = () => {
        set.delete(send);
        if (set.size === 0 && this.byJob.get(jobId) === set) this.byJob.delete(jobId);
        call.end();
        resolve();
      };
      const send = (j: JobRecord) => {
        const info = jobInfo(j);
        const text = JSON.stringify(info);
        if (text !== last) {
          last = text;
          call.write(info);
        }
        if (TERMINAL_STATES.has(j.state)) done();
      };
      call.on('cancelled', done);
      set.add(send);
      send(first);
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
