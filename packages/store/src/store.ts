/**
 * The store interface: where the master keeps its hard state (docs/design.md, "Hard state and soft state"). Keys are
 * `/`-separated paths, values are strings (JSON). Backends: embedded (LevelDB, single host) and
 * in-memory (tests); etcd joins them behind the same interface.
 */
export interface KeyValue {
  key: string;
  value: string;
}

export type StoreOp = { type: 'put'; key: string; value: string } | { type: 'del'; key: string };

export interface Store {
  /** Backend name, for logs: `embedded`, `memory`, `etcd`. */
  readonly kind: string;
  get(key: string): Promise<string | undefined>;
  /** Every key under `prefix`, in key order. */
  list(prefix: string): Promise<KeyValue[]>;
  put(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
  /** Applies all ops atomically, in order. */
  batch(ops: readonly StoreOp[]): Promise<void>;
  close(): Promise<void>;
}

/** The first key after every key with this prefix (for range scans). */
export function prefixEnd(prefix: string): string {
  return `${prefix}\uffff`;
}
