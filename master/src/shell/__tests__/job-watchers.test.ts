import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import type { ServerWritableStream } from '@grpc/grpc-js';
import type { JobInfo } from '@fuxi/proto';
import type { JobRecord } from '../../core/types.js';
import { mockSpec } from '../../core/__tests__/core-factories.js';
import { JobWatchers, jobNews } from '../job-watchers.js';

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
    for (let i = 1; i < 10; i++) w.notify(jobNews(record('a', `m${i}`)));
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
    for (let i = 0; i < 10; i++) w.notify(jobNews(record(i % 2 ? 'a' : 'b', `m${i}`)));
    await served;
    // The first records (what the caller asked for) do not count against the bound: 2 + 4.
    expect(call.writableLength).to.equal(6);
    expect(call.errors.map((e) => e.code)).to.deep.equal([grpc.status.RESOURCE_EXHAUSTED]);
    expect(w.has('a') || w.has('b')).to.equal(false);
  });

  it('a reader that keeps up is never cut off', async () => {
    const w = new JobWatchers(2);
    const call = new StalledCall();
    call.write = () => true; // taken by the transport at once
    const served = w.serve(record('a', 'm0'), call as unknown as ServerWritableStream<unknown, JobInfo>);
    for (let i = 1; i < 10; i++) w.notify(jobNews(record('a', `m${i}`)));
    w.notify(jobNews(record('a', 'end', 'succeeded')));
    await served;
    expect(call.errors).to.deep.equal([]);
    expect(call.ended).to.equal(true);
  });
  it('WatchJobs: every first record goes, ended jobs included, however many, and the stream ends when all have', async () => {
    const w = new JobWatchers(1000);
    const ended = new StalledCall();
    await w.serveMany(
      [record('a', 'x', 'succeeded'), record('b', 'x', 'failed'), record('c', 'x', 'succeeded')],
      ended as unknown as ServerWritableStream<unknown, JobInfo>,
      true,
    );
    expect([ended.writableLength, ended.ended, ended.errors.length]).to.deep.equal([3, true, 0]);
    // 2,000 running members of an array: all their records go before any bound applies.
    const many = new StalledCall();
    const records = Array.from({ length: 2000 }, (_, i) => record(`m${i}`, 'x'));
    const served = w.serveMany(records, many as unknown as ServerWritableStream<unknown, JobInfo>);
    expect([many.writableLength, many.errors.length]).to.deep.equal([2000, 0]);
    for (const r of records) w.notify(jobNews({ ...r, state: 'succeeded' } as JobRecord));
    await served;
    expect(many.errors.map((e) => e.code)).to.deep.equal([grpc.status.RESOURCE_EXHAUSTED]); // nobody read them
  });
});

/** A WatchJob(s) stream that takes every message and keeps what it was given. */
class ReadingCall extends StalledCall {
  got: JobInfo[] = [];
  override write(info?: unknown): boolean {
    this.got.push(info as JobInfo);
    return true;
  }
}

const held = () => {
  let open!: () => void;
  let fail!: (e: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { ready, open, fail };
};
const tick = () => new Promise((r) => setImmediate(r));

describe('job watchers: nothing goes out before it is durable', () => {
  it('WatchJob: the first record waits for `ready`, is the record as it was when the stream opened, and changes follow it in order', async () => {
    const w = new JobWatchers();
    const call = new ReadingCall();
    const gate = held();
    const job = record('a', 'first');
    const served = w.serve(job, call as unknown as ServerWritableStream<unknown, JobInfo>, gate.ready);
    expect(w.has('a'), 'registered at once: no change is missed').to.equal(true);
    job.message = 'changed in place, not yet durable';
    w.notify(jobNews(record('a', 'second')));
    await tick();
    expect(call.got).to.deep.equal([]);
    gate.open();
    w.notify(jobNews(record('a', 'done', 'succeeded')));
    await served;
    expect(call.got.map((j) => j.message)).to.deep.equal(['first', 'second', 'done']);
    expect([call.ended, w.has('a')]).to.deep.equal([true, false]);
  });

  it('WatchJob: when `ready` fails the stream shows nothing, fails with its error, and is forgotten', async () => {
    const w = new JobWatchers();
    const call = new ReadingCall();
    const gate = held();
    const served = w.serve(record('a', 'first'), call as unknown as ServerWritableStream<unknown, JobInfo>, gate.ready);
    w.notify(jobNews(record('a', 'second')));
    gate.fail(new Error('term ended'));
    const err = await served.then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).to.equal('term ended');
    expect([call.got.length, call.ended, w.has('a')]).to.deep.equal([0, false, false]);
  });

  it('WatchJobs: the first records wait for `ready`; an ended job among them goes then, and changes follow', async () => {
    const w = new JobWatchers();
    const call = new ReadingCall();
    const gate = held();
    const served = w.serveMany(
      [record('a', 'a0'), record('b', 'b0', 'succeeded')],
      call as unknown as ServerWritableStream<unknown, JobInfo>,
      false,
      gate.ready,
    );
    w.notify(jobNews(record('a', 'a1')));
    await tick();
    expect(call.got).to.deep.equal([]);
    gate.open();
    await tick();
    w.notify(jobNews(record('a', 'a2', 'failed')));
    await served;
    expect(call.got.map((j) => j.message)).to.deep.equal(['a0', 'b0', 'a1', 'a2']);
    expect([call.ended, w.has('a'), w.has('b')]).to.deep.equal([true, false, false]);
  });

  it('WatchJobs: when `ready` fails nothing is shown and every subscription is dropped', async () => {
    const w = new JobWatchers();
    const call = new ReadingCall();
    const gate = held();
    const served = w.serveMany([record('a', 'a0'), record('b', 'b0')], call as unknown as ServerWritableStream<unknown, JobInfo>, false, gate.ready);
    expect([w.has('a'), w.has('b')]).to.deep.equal([true, true]);
    gate.fail(new Error('term ended'));
    expect(
      await served.then(
        () => 'served',
        (e: Error) => e.message,
      ),
    ).to.equal('term ended');
    expect([call.got.length, w.has('a'), w.has('b')]).to.deep.equal([0, false, false]);
  });

  it("a term's end (clear) ends every open stream with its error, held or open, and forgets them", async () => {
    const w = new JobWatchers();
    const one = new ReadingCall();
    const many = new ReadingCall();
    const waiting = new ReadingCall();
    const a = w.serve(record('a', 'a0'), one as unknown as ServerWritableStream<unknown, JobInfo>, Promise.resolve());
    const b = w.serveMany([record('b', 'b0'), record('c', 'c0')], many as unknown as ServerWritableStream<unknown, JobInfo>, false, Promise.resolve());
    const c = w.serve(record('d', 'd0'), waiting as unknown as ServerWritableStream<unknown, JobInfo>, held().ready);
    await tick();
    w.clear(new Error('term ended'));
    const outcome = (p: Promise<void>) =>
      p.then(
        () => 'served',
        (e: Error) => e.message,
      );
    expect(await Promise.all([a, b, c].map(outcome))).to.deep.equal(['term ended', 'term ended', 'term ended']);
    expect([one.got.length, many.got.length, waiting.got.length]).to.deep.equal([1, 2, 0]);
    expect(['a', 'b', 'c', 'd'].some((id) => w.has(id))).to.equal(false);
    // A stream opened after it is served as usual.
    const after = new ReadingCall();
    const d = w.serve(record('a', 'a1'), after as unknown as ServerWritableStream<unknown, JobInfo>);
    w.notify(jobNews(record('a', 'end', 'killed')));
    await d;
    expect(after.got.map((j) => j.message)).to.deep.equal(['a1', 'end']);
  });
});
