import type { KeyValue, Store, StoreOp } from './store.js';

/** An in-memory store for unit tests and simulations. */
export class MemoryStore implements Store {
  readonly kind = 'memory';
  private data = new Map<string, string>();
  private closed = false;

  private check(): void {
    if (this.closed) throw new Error('store is closed');
  }

  async get(key: string): Promise<string | undefined> {
    this.check();
    return this.data.get(key);
  }

  async list(prefix: string): Promise<KeyValue[]> {
    this.check();
    return [...this.data.entries()]
      .filter(([k]) => k.startsWith(prefix))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, value]) => ({ key, value }));
  }

  async put(key: string, value: string): Promise<void> {
    this.check();
    this.data.set(key, value);
  }

  async delete(key: string): Promise<void> {
    this.check();
    this.data.delete(key);
  }

  async batch(ops: readonly StoreOp[]): Promise<void> {
    this.check();
    for (const op of ops) {
      if (op.type === 'put') this.data.set(op.key, op.value);
      else this.data.delete(op.key);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
