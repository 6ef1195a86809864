/**
 * A hosted application master in a worker thread of the AM host (am-host.ts): a large job's AM,
 * with an event loop of its own. Takes its spec from `workerData`, logs to `<worker dir>/stdout`,
 * runs the AppMaster and ends the thread with its exit code (0 after FinishApp, 1 on a fatal
 * error), told to the host first (`{ exit }`): the host reports that end even when the stop's grace
 * ran out as the thread was exiting. An uncaught error ends this thread alone (the host reports
 * exit code 1). Commands from
 * the host: `stop` (its worker is being stopped) and `fault` (fault injection).
 */
import * as path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { pino } from 'pino';
import { errorMessage, type Logger } from '@fuxi/common';
import { AppMaster, configFromEnv } from './app-master.js';
import type { ThreadCommand, ThreadData, ThreadReport } from './am-host.js';

const { spec, level } = workerData as ThreadData;
const dest = pino.destination({ dest: path.join(spec.dir, 'stdout'), sync: false, append: true, mkdir: true });
const log = pino(
  { name: 'appmaster', level, base: { pid: process.pid, hosted: true, thread: true }, timestamp: pino.stdTimeFunctions.isoTime },
  dest,
) as unknown as Logger;

function exit(code: number, message: string): void {
  // Told first: a stop's grace that runs out from here on terminates a thread whose end is its own
  // (the host reports this code, not a kill).
  const told: ThreadReport = { exit: { code, message } };
  parentPort?.postMessage(told);
  log.info({ exitCode: code, message }, 'application master ended');
  try {
    dest.flushSync();
  } catch {
    /* nothing buffered */
  }
  process.exit(code);
}

let resume: (() => void) | undefined;
let am: AppMaster;
try {
  am = new AppMaster(configFromEnv(spec.env, log));
} catch (e) {
  log.error({ err: errorMessage(e) }, 'application master could not start');
  exit(1, `could not start: ${errorMessage(e)}`);
  throw e;
}
parentPort?.on('message', (cmd: ThreadCommand) => {
  if (cmd.op === 'stop') void am.stop(cmd.reason).catch(() => undefined);
  else if (cmd.op === 'progress') {
    const report: ThreadReport = { progress: am.progress() };
    parentPort?.postMessage(report);
  } else if (cmd.fault === 'throw')
    setImmediate(() => {
      throw new Error('fault injection: an exception inside the application master');
    });
  else if (cmd.fault === 'pause') resume ??= am.pause();
  else {
    resume?.();
    resume = undefined;
  }
});
am.run().then(
  () => exit(0, 'finished'),
  (e: unknown) => exit(1, errorMessage(e)),
);
