import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import { ResourceExhaustedError } from '@fuxi/common';
import { endExhausted, queueFull, writeBounded } from '../stream-bounds.js';

/** A server stream whose transport takes `room` messages, then nothing until `drain()`. */
class FakeCall extends EventEmitter {
  writableLength = 0;
  constructor(private room: number) {
    super();
  }
  write(): boolean {
    this.writableLength++;
    return this.writableLength < this.room;
  }
  drain(): void {
    this.writableLength = 0;
    this.emit('drain');
  }
}

describe('bounded streams (stream-bounds.ts)', () => {
  it('writeBounded returns at once while there is room, and waits for drain when there is none', async () => {
    const call = new FakeCall(2);
    await writeBounded(call, 'a', 1000);
    let done = false;
    const p = writeBounded(call, 'b', 1000).then(() => (done = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(done).to.equal(false);
    call.drain();
    await p;
    expect(done).to.equal(true);
    expect(call.listenerCount('drain')).to.equal(0);
  });

  it('writeBounded ends a stalled reader with RESOURCE_EXHAUSTED after stallMs', async () => {
    const call = new FakeCall(1);
    let err: unknown;
    await writeBounded(call, 'a', 30, 'ReadLog').catch((e: unknown) => (err = e));
    expect(err).to.be.instanceOf(ResourceExhaustedError);
    expect(String((err as Error).message)).to.match(/ReadLog ended; call again to resume/);
    expect(call.listenerCount('drain')).to.equal(0);
  });

  it('queueFull / endExhausted: a pushed stream past its bound ends with RESOURCE_EXHAUSTED', () => {
    const call = new FakeCall(100);
    for (let i = 0; i < 5; i++) call.write();
    expect(queueFull(call, 6)).to.equal(false);
    call.write();
    expect(queueFull(call, 6)).to.equal(true);
    const seen: Array<{ code?: number; details?: string }> = [];
    call.on('error', (e: { code?: number; details?: string }) => seen.push(e));
    endExhausted(call, 'WatchJobs', 6);
    expect(seen[0]?.code).to.equal(grpc.status.RESOURCE_EXHAUSTED);
    expect(seen[0]?.details).to.match(/WatchJobs: the reader fell 6 messages behind/);
  });
});
