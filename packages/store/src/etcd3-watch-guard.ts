/**
 * A guard around a fault of the etcd3 client (1.1.x): its watch manager throws from the watch
 * stream's 'data' handler when a response names a watcher it no longer tracks ("Failed to find
 * watcher for IWatchResponse"; for a refused creation, "Got a watch creation error, but found no
 * pending watchers"). That happens when a response was still in flight on a stream the client had
 * just given up (an etcd member killed, a link cut): the client has reset its watchers' ids and
 * is reconnecting. Thrown there, it is an uncaught exception, and the process guard ends the
 * daemon. Such a response concerns no watcher of ours, so it is dropped; the watchers carry on on
 * the new stream (found by the history test: a master exited when an etcd member was killed).
 *
 * Installed once, by importing this module (etcd-store.ts does).
 */
import { WatchManager } from 'etcd3/lib/watch.js';

interface WatchResponse {
  watch_id: string;
  canceled?: boolean;
}

interface Internals {
  watchers: Array<{ id: string | null }>;
  handleResponse(res: WatchResponse): void;
  handleCreatedResponse(res: WatchResponse): void;
  __fuxiGuarded?: boolean;
}

const proto = WatchManager.prototype as unknown as Internals;

/** Responses dropped because no watcher was waiting for them (for tests and logs). */
export const droppedWatchResponses = { count: 0 };

if (!proto.__fuxiGuarded) {
  proto.__fuxiGuarded = true;
  const handleResponse = proto.handleResponse;
  proto.handleResponse = function (this: Internals, res: WatchResponse): void {
    if (!this.watchers.some((w) => w.id === res.watch_id)) {
      droppedWatchResponses.count++;
      return;
    }
    handleResponse.call(this, res);
  };
  const handleCreatedResponse = proto.handleCreatedResponse;
  proto.handleCreatedResponse = function (this: Internals, res: WatchResponse): void {
    if (res.canceled && !this.watchers.some((w) => w.id === null)) {
      droppedWatchResponses.count++;
      return;
    }
    handleCreatedResponse.call(this, res);
  };
}
