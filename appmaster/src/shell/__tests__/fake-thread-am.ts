/**
 * A thread AM for am-host.test.ts (`AmHostOptions.threadEntry`), ending as its spec's
 * `FAKE_THREAD_END` says when told to stop:
 * - `exit`: ends by itself with exit code 0, as am-thread.ts does (tells the host its end, then
 *   `process.exit`), after writing `<dir>/exiting` (the test's sign that its exit is under way);
 * - `hang`: tells the host its end (0), then hangs until the host terminates it;
 * - `ignore`: goes on running (only the grace's termination ends it).
 * It writes `<dir>/ready` once it listens.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import type { ThreadCommand, ThreadData, ThreadReport } from '../am-host.js';

const { spec } = workerData as ThreadData;
const mode = spec.env.FAKE_THREAD_END ?? 'exit';
parentPort?.on('message', (cmd: ThreadCommand) => {
  if (cmd.op !== 'stop' || mode === 'ignore') return;
  const told: ThreadReport = { exit: { code: 0, message: 'finished' } };
  parentPort?.postMessage(told);
  if (mode === 'hang') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  fs.writeFileSync(path.join(spec.dir, 'exiting'), '');
  process.exit(0);
});
fs.mkdirSync(spec.dir, { recursive: true });
fs.writeFileSync(path.join(spec.dir, 'ready'), '');
