/**
 * Records agents' heartbeat arrivals to a file, one line per arrival: `<nodeId> <epoch ms>` (the
 * master's wall clock when the Heartbeat call arrived). The traces feed `make bench-detectors`,
 * which replays them through every failure detector (master/src/core/detectors.ts).
 *
 * ```ts
 * const rec = HeartbeatRecorder.open('/tmp/hb.txt');
 * rec.arrival('node-1', Date.now());
 * await rec.close();
 * ```
 */
import { createWriteStream, type WriteStream } from 'node:fs';

export class HeartbeatRecorder {
  private constructor(private readonly out: WriteStream) {}

  /** Appends to `path` (created if missing). */
  static open(path: string): HeartbeatRecorder {
    return new HeartbeatRecorder(createWriteStream(path, { flags: 'a' }));
  }

  arrival(nodeId: string, atMs: number): void {
    this.out.write(`${nodeId} ${atMs}\n`);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.out.end(resolve));
  }
}

/** Parses a recorded trace: arrival times per node, in order. Lines that are not `<id> <ms>` are errors naming the line. */
export function parseHeartbeatTrace(text: string, source = 'trace'): Map<string, number[]> {
  const out = new Map<string, number[]>();
  text.split('\n').forEach((line, i) => {
    const t = line.trim();
    if (t === '' || t.startsWith('#')) return;
    const m = /^(\S+)\s+(\d+(?:\.\d+)?)$/.exec(t);
    if (!m) throw new Error(`${source}:${i + 1}: expected "<nodeId> <ms>", got ${JSON.stringify(t.slice(0, 80))}`);
    const list = out.get(m[1]!) ?? [];
    list.push(Number(m[2]));
    out.set(m[1]!, list);
  });
  for (const list of out.values()) list.sort((a, b) => a - b);
  return out;
}
