import { Level } from 'level';
import { prefixEnd, type KeyValue, type Store, type StoreOp } from './store.js';

/**
 * The embedded backend: a LevelDB directory on the master's host. One master, no standbys;
 * failover is a restart in place (docs/design.md, "Hard state and soft state").
 */
export class EmbeddedStore implements Store {
  readonly kind = 'embedded';

  private constructor(private readonly db: Level<string, string>) {}

  static async open(dir: string): Promise<EmbeddedStore> {
    const db = new Level<string, string>(dir, { valueEncoding: 'utf8', keyEncoding: 'utf8' });
    await db.open();
    return new EmbeddedStore(db);
  }

  async get(key: string): Promise<string | undefined> {
    const v = await this.db.get(key);
    return v ?? undefined;
  }

  async list(prefix: string): Promise<KeyValue[]> {
    const out: KeyValue[] = [];
    for await (const [key, value] of this.db.iterator({ gte: prefix, lt: prefixEnd(prefix) })) out.push({ key, value });
    return out;
  }

  async put(key: string, value: string): Promise<void> {
    await this.db.put(key, value, { sync: true } as never);
  }

  async delete(key: string): Promise<void> {
    await this.db.del(key, { sync: true } as never);
  }

  async batch(ops: readonly StoreOp[]): Promise<void> {
    if (ops.length === 0) return;
    await this.db.batch(
      ops.map((op) => (op.type === 'put' ? { type: 'put' as const, key: op.key, value: op.value } : { type: 'del' as const, key: op.key })),
      { sync: true } as never,
    );
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
