/**
 * The etcd3 watch guard: a watch response for a watcher the client no longer tracks (one still in
 * flight on a stream it gave up) is dropped instead of thrown from the stream's data handler, where
 * it would end the process; responses for tracked watchers are handled as before.
 */
import { expect } from 'chai';
import { WatchManager } from 'etcd3/lib/watch.js';
import { droppedWatchResponses } from '../etcd3-watch-guard.js';

type Internals = {
  watchers: Array<{ id: string | null; emit: (ev: string, res: unknown) => boolean }>;
  handleResponse(res: unknown): void;
  handleCreatedResponse(res: unknown): void;
};

describe('etcd3 watch guard', () => {
  const manager = () => Object.assign(Object.create(WatchManager.prototype) as Internals, { initialBackoff: { next: () => undefined } });

  it('drops a response for an unknown watcher instead of throwing', () => {
    const m = manager();
    m.watchers = [{ id: null, emit: () => true }];
    const before = droppedWatchResponses.count;
    expect(() => m.handleResponse({ watch_id: '7', canceled: false, events: [] })).to.not.throw();
    expect(droppedWatchResponses.count).to.equal(before + 1);
  });

  it('drops a refused creation when no watcher is pending', () => {
    const m = manager();
    m.watchers = [{ id: '1', emit: () => true }];
    expect(() => m.handleCreatedResponse({ watch_id: '-1', created: true, canceled: true, cancel_reason: 'x' })).to.not.throw();
  });

  it('still delivers a response to the watcher it names', () => {
    const m = manager();
    const got: unknown[] = [];
    m.watchers = [{ id: '3', emit: (ev, res) => got.push([ev, res]) > 0 }];
    const res = { watch_id: '3', canceled: false, events: [] };
    m.handleResponse(res);
    expect(got).to.deep.equal([['data', res]]);
  });
});
