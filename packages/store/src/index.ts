/**
 * @fuxi/store: the master's hard-state store behind one interface.
 *
 * ```ts
 * const store = await openStore({ kind: 'embedded', dir: '/var/lib/fuxi/master' });
 * await store.batch([{ type: 'put', key: 'jobs/j1', value: JSON.stringify(job) }]);
 * ```
 */
import { EmbeddedStore } from './embedded-store.js';
import { MemoryStore } from './memory-store.js';
import type { Store } from './store.js';

export * from './store.js';
export { EmbeddedStore } from './embedded-store.js';
export { MemoryStore } from './memory-store.js';

export type StoreConfig = { kind: 'embedded'; dir: string } | { kind: 'memory' };

export async function openStore(cfg: StoreConfig): Promise<Store> {
  switch (cfg.kind) {
    case 'embedded':
      return EmbeddedStore.open(cfg.dir);
    case 'memory':
      return new MemoryStore();
  }
}
