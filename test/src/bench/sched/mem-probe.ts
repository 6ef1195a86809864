/**
 * Preloaded into the master by the scheduler benchmark (`node --expose-gc --import <this file>
 * master/dist/shell/main.js ...`, spawned with an IPC channel). On the message `'mem'` it runs a
 * full garbage collection and answers with `process.memoryUsage()`, so the benchmark can measure
 * live memory (not garbage waiting for the collector) of the real master. With
 * FUXI_BENCH_HEAP_DIR set it also writes a heap snapshot per probe, named by its label.
 */
import { writeHeapSnapshot } from 'node:v8';
import { join } from 'node:path';

interface MemRequest {
  type: 'mem';
  id: number;
  label?: string;
}

/** When set, each probe also writes `<dir>/<label>.heapsnapshot` (for finding what grew). */
const HEAP_DIR = process.env.FUXI_BENCH_HEAP_DIR ?? '';

if (typeof process.send === 'function') {
  process.on('message', (m: unknown) => {
    const req = m as MemRequest;
    if (!req || req.type !== 'mem') return;
    const gc = (globalThis as { gc?: () => void }).gc;
    // Twice: the first pass can leave objects with finalizers or weak references for the second.
    gc?.();
    gc?.();
    if (HEAP_DIR && req.label) writeHeapSnapshot(join(HEAP_DIR, `${req.label}.heapsnapshot`));
    process.send?.({ type: 'mem', id: req.id, gc: gc !== undefined, usage: process.memoryUsage() });
  });
  // The IPC channel must not keep a master alive that would otherwise exit.
  (process.channel as { unref?: () => void } | undefined)?.unref?.();
}
