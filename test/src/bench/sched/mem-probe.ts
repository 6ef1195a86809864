/**
 * Preloaded into the master by the scheduler benchmark (`node --expose-gc --import <this file>
 * master/dist/shell/main.js ...`, spawned with an IPC channel). On the message `'mem'` it runs a
 * full garbage collection and answers with `process.memoryUsage()`, so the benchmark can measure
 * live memory (not garbage waiting for the collector) of the real master. Does nothing else.
 */
interface MemRequest {
  type: 'mem';
  id: number;
}

if (typeof process.send === 'function') {
  process.on('message', (m: unknown) => {
    const req = m as MemRequest;
    if (!req || req.type !== 'mem') return;
    const gc = (globalThis as { gc?: () => void }).gc;
    // Twice: the first pass can leave objects with finalizers or weak references for the second.
    gc?.();
    gc?.();
    process.send?.({ type: 'mem', id: req.id, gc: gc !== undefined, usage: process.memoryUsage() });
  });
  // The IPC channel must not keep a master alive that would otherwise exit.
  (process.channel as { unref?: () => void } | undefined)?.unref?.();
}
