import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedStore, MemoryStore, type Store } from '../index.js';
import { storeContract } from './contract.js';

storeContract('memory', async () => {
  const store = new MemoryStore();
  return { store, cleanup: () => store.close() };
});

storeContract('embedded', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fuxi-store-'));
  const ctx = {
    store: (await EmbeddedStore.open(dir)) as Store,
    reopen: () => EmbeddedStore.open(dir),
    cleanup: async () => {
      await ctx.store.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return ctx;
});
