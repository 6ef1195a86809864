/**
 * @fuxi/store: the master's hard-state store behind one interface, and master leader election.
 *
 * ```ts
 * const store = await openStore({ kind: 'embedded', dir: '/var/lib/fuxi/master' });
 * await store.batch([{ type: 'put', key: 'jobs/j1', value: JSON.stringify(job) }]);
 * ```
 *
 * With etcd (HA: one leader, warm standbys):
 *
 * ```ts
 * const store = await EtcdStore.open({ endpoints: ['http://10.0.0.9:2379'], prefix: '/fuxi/' });
 * const election = new LeaderElection(store.coordination(), { ttlSec: 5, log });
 * election.on('leader', (l) => master.lead(l.epoch, store.withGuard(l.guard))); // fenced writes
 * election.on('stepDown', (s) => master.stopLeading(s.reason));                 // synchronous
 * election.on('leaderChange', (o) => master.redirectTo(o?.value));               // standbys
 * election.campaign(myAddress);
 * ```
 */
import { EmbeddedStore } from './embedded-store.js';
import { EtcdStore } from './etcd-store.js';
import { MemoryStore } from './memory-store.js';
import type { Logger } from '@fuxi/common';
import type { Store } from './store.js';

export * from './store.js';
export { EmbeddedStore } from './embedded-store.js';
export { MemoryStore } from './memory-store.js';
export { EtcdStore, FencedError, StoreOutOfSpaceError, isGuardable, type EtcdStoreOptions, type GuardableStore } from './etcd-store.js';
export { WatchCompactedError } from './coordination.js';
export type { StoreGuard, CoordinationBackend, KeyRecord, LeaseHandle, LeaseListener, WatchCallbacks, WatchEvent, WatchHandle } from './coordination.js';
export {
  LeaderElection,
  type CampaignFailure,
  type ElectionEvents,
  type LeaderElectionOptions,
  type Leadership,
  type ObservedLeader,
  type StepDown,
  type StepDownReason,
} from './election.js';
export { FakeClock, systemClock, type Clock, type TimerHandle } from './clock.js';

export type StoreConfig =
  | { kind: 'embedded'; dir: string }
  | { kind: 'memory' }
  | { kind: 'etcd'; endpoints: string[] | string; prefix?: string; requestTimeoutMs?: number; log?: Logger };

export async function openStore(cfg: StoreConfig): Promise<Store> {
  switch (cfg.kind) {
    case 'embedded':
      return EmbeddedStore.open(cfg.dir);
    case 'memory':
      return new MemoryStore();
    case 'etcd':
      return EtcdStore.open(cfg);
  }
}
