import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import type { ServerWritableStream } from '@grpc/grpc-js';
import type { JobInfo } from '@fuxi/proto';
import type { JobRecord } from '../../core/types.js';
import { mockSpec } from '../../core/__tests__/core-factories.js';
import { JobWatchers } from '../job-watchers.js';

/** A WatchJob(s) stream whose reader reads nothing: every message stays queued. */
class StalledCall extends EventEmitter {
  writableLength = 0;
  ended = false;
  errors: Array<{ code?: number }> = [];
  constructor() {
    super();
    this.on('error', (e: { code?: number }) => this.errors.push(e));
  }
  write(): boolean {
    this.writableLength++;
    return false;
  }
  end(): void {
    this.ended = true;
  }
}

const record = (jobId: string, message: string, state: JobRecord['state'] = 'running'): JobRecord =>
  ({ jobId, spec: mockSpec({ id: jobId }), state, message, submittedAtMs: 0, amAttempt: 1 }) as unknown as JobRecord;

describe('job watchers: bounded for a reader that does not read', () => {
  it('WatchJob: ends the stream with RESOURCE_EXHAUSTED past maxQueued, and forgets the watcher', async () => {
    const w = new JobWatchers(3);
    const call = new StalledCall();
    const served = w.serve(record('a', 'm0'), call as unknown as ServerWritableStream<unknown, JobInfo>);
    for (let i = 1; i < 10; i++) w.notify(record('a', `m${i}`));
    await served;
    expect(call.writableLength).to.equal(3);
    expect(call.errors.map((e) => e.code)).to.deep.equal([grpc.status.RESOURCE_EXHAUSTED]);
    expect(call.ended).to.equal(false);
    expect(w.has('a')).to.equal(false);
  });

  it('WatchJobs: the same for one stream of many jobs', async () => {
    const w = new JobWatchers(4);
    const call = new StalledCall();
    const served = w.serveMany([record('a', 'x'), record('b', 'x')], call as unknown as ServerWritableStream<unknown, JobInfo>);
    for (let i = 0; i < 10; i++) w.notify(record(i % 2 ? 'a' : 'b', `m${i}`));
    await served;
    expect(call.writableLength).to.equal(4);
    expect(call.errors.map((e) => e.code)).to.deep.equal([grpc.status.RESOURCE_EXHAUSTED]);
    expect(w.has('a') || w.has('b')).to.equal(false);
  });

  it('a reader that keeps up is never cut off', async () => {
    const w = new JobWatchers(2);
    const call = new StalledCall();
    call.write = () => true; // taken by the transport at once
    const served = w.serve(record('a', 'm0'), call as unknown as ServerWritableStream<unknown, JobInfo>);
    for (let i = 1; i < 10; i++) w.notify(record('a', `m${i}`));
    w.notify(record('a', 'end', 'succeeded'));
    await served;
    expect(call.errors).to.deep.equal([]);
    expect(call.ended).to.equal(true);
  });
});
