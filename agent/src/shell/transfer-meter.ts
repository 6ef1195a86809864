/**
 * What the data service measures of every transfer it serves (PBSE's path progress, seed 001):
 * source host (this node), destination host and reader (from the request), bytes and time so far,
 * done or not. The agent sends the records that changed to the reader's AM with its worker events
 * (`ProgressWatcher`), so a reader that reports nothing is still covered. A resumed fetch (offset >
 * 0) continues the same record.
 *
 * ```ts
 * const t = meter.begin({ appId, srcWorker: 'map.2.1', readerWorker: 'reduce.0.1', readerNode: 'n1' }, Date.now());
 * meter.add(t, chunk.length); ... meter.end(t, Date.now());
 * for (const { appId, records } of meter.drain(Date.now())) events.pushPaths(appId, amAddress, records);
 * ```
 */
import type { PathRecord } from '@fuxi/proto';

export interface TransferKey {
  appId: string;
  srcWorker: string;
  readerWorker: string;
  readerNode: string;
}

interface Transfer extends TransferKey {
  bytes: number;
  startedAt: number;
  endedAt: number;
  /** Streams of it in flight (a resumed fetch may overlap the old one briefly). */
  open: number;
  changed: boolean;
}

/** Transfers kept at most (the oldest finished go first). */
const MAX_TRANSFERS = 10_000;

export class TransferMeter {
  private readonly transfers = new Map<string, Transfer>();

  constructor(private readonly nodeId: string) {}

  /** A stream starts; transfers without a reader id are not measured (a CLI's fetch). */
  begin(k: TransferKey, now: number): string | undefined {
    if (!k.readerWorker || !k.readerNode || !k.appId) return undefined;
    const key = `${k.appId}\u0000${k.readerWorker}\u0000${k.srcWorker}`;
    let t = this.transfers.get(key);
    if (!t) {
      if (this.transfers.size >= MAX_TRANSFERS) this.evict();
      t = { ...k, bytes: 0, startedAt: now, endedAt: 0, open: 0, changed: true };
      this.transfers.set(key, t);
    }
    t.open++;
    t.endedAt = 0;
    t.changed = true;
    return key;
  }

  add(key: string | undefined, bytes: number): void {
    const t = key ? this.transfers.get(key) : undefined;
    if (!t) return;
    t.bytes += bytes;
    t.changed = true;
  }

  /** The stream ended; `complete` when the whole file went out. */
  end(key: string | undefined, now: number, complete: boolean): void {
    const t = key ? this.transfers.get(key) : undefined;
    if (!t) return;
    t.open = Math.max(0, t.open - 1);
    if (t.open === 0 && complete) t.endedAt = now;
    t.changed = true;
  }

  /**
   * Records to report now, by app: every transfer that changed since the last call, and every one
   * in flight (its time grows even when no byte moves: a stalled read). Finished ones are reported
   * once more and forgotten.
   */
  drain(now: number): Array<{ appId: string; records: PathRecord[] }> {
    const byApp = new Map<string, PathRecord[]>();
    for (const [key, t] of this.transfers) {
      const inFlight = t.open > 0;
      if (!t.changed && !inFlight) continue;
      t.changed = false;
      const done = t.endedAt > 0;
      const rec: PathRecord = {
        srcNode: this.nodeId,
        dstNode: t.readerNode,
        srcWorker: t.srcWorker,
        readerWorker: t.readerWorker,
        bytes: String(t.bytes),
        elapsedMs: String(Math.max(0, (done ? t.endedAt : now) - t.startedAt)),
        done,
      };
      let list = byApp.get(t.appId);
      if (!list) byApp.set(t.appId, (list = []));
      list.push(rec);
      if (!inFlight) this.transfers.delete(key);
    }
    return [...byApp].map(([appId, records]) => ({ appId, records }));
  }

  get size(): number {
    return this.transfers.size;
  }

  private evict(): void {
    for (const [key, t] of this.transfers) {
      if (t.open === 0) {
        this.transfers.delete(key);
        return;
      }
    }
    const first = this.transfers.keys().next().value;
    if (first !== undefined) this.transfers.delete(first);
  }
}
