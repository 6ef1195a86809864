/**
 * The agent's data service (`AgentService.FetchOutput`): serves the files a succeeded worker wrote
 * into its output directory (`$FUXI_OUTPUT_DIR`, `<workDir>/apps/<app>/<worker>/out/`) to other
 * workers of its job on other hosts, the way YARN's NodeManager serves map output to reducers. No
 * filesystem is shared between hosts: a reducer fetches each map's partition from the host that
 * wrote it.
 *
 * Only a worker that succeeded is served (its output is complete), only files inside its output
 * directory (no `..`, no absolute path, no symlink out of it), in 64 KiB chunks with backpressure.
 * Workers of an earlier agent run are found on disk (their `cmd.json` and `exit` file).
 *
 * ```ts
 * const data = new DataService({ workDir, workers: { byId: (a, w) => core.worker(a, w), list: (a) => core.listWorkers(a) } });
 * // in the AgentService handlers:
 * FetchOutput: (req, call) => data.fetch(req, call),
 * ```
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError, errorMessage } from '@fuxi/common';
import type { FetchOutputRequest__Output, OutputChunk } from '@fuxi/proto';
import { DEFAULT_STREAM_STALL_MS, toGrpcError, writeBounded } from '@fuxi/rpc';
import type { WorkerInfo } from '../core/agent-core.js';
import { outputDir, workerDir } from './process-driver.js';
import type { TransferMeter } from './transfer-meter.js';
import { openRegular, readRegularAsync } from './worker-files.js';

export const OUTPUT_CHUNK = 64 * 1024;

export interface DataServiceOptions {
  workDir: string;
  /** Measures every transfer to a reader that names itself (speculative execution); none: not measured. */
  meter?: TransferMeter;
  /** The agent core's view of its workers. */
  workers: {
    byId(appId: string, workerId: string): WorkerInfo | undefined;
    list(appId: string): WorkerInfo[];
  };
}

/** A worker whose output can be served: its id and whether it succeeded. */
interface Source {
  workerId: string;
  succeeded: boolean;
  state: string;
}

export class DataService {
  constructor(private readonly opts: DataServiceOptions) {}

  /** The FetchOutput handler: errors are sent as the stream's status. */
  fetch(req: FetchOutputRequest__Output, call: grpc.ServerWritableStream<FetchOutputRequest__Output, OutputChunk>): Promise<void> {
    return this.serve(req, call).catch((e: unknown) => {
      const ge = toGrpcError(e);
      call.emit('error', Object.assign(new Error(ge.details ?? errorMessage(e)), ge));
    });
  }

  /** The file a request names, after every check (throws typed errors naming the field). */
  async resolve(req: FetchOutputRequest__Output): Promise<{ file: string; workerId: string; size: number }> {
    if (!req.appId) throw new InvalidArgumentError('appId', 'must not be empty');
    const rel = checkRelativePath(req.path);
    const src = await this.source(req);
    if (!src.succeeded) throw new FailedPreconditionError(`worker ${req.appId}/${src.workerId} has not succeeded (${src.state}): its output is not complete`);
    const root = outputDir(this.opts.workDir, req.appId, src.workerId);
    const file = path.join(root, rel);
    let real: string;
    let realRoot: string;
    try {
      [real, realRoot] = await Promise.all([fs.promises.realpath(file), fs.promises.realpath(root)]);
    } catch {
      throw new NotFoundError('output', `${req.appId}/${src.workerId}/${rel}`);
    }
    if (real !== realRoot && !real.startsWith(realRoot + path.sep))
      throw new InvalidArgumentError('path', `${JSON.stringify(req.path)} leaves the worker's output directory`);
    const st = await fs.promises.stat(real);
    if (!st.isFile()) throw new NotFoundError('output', `${req.appId}/${src.workerId}/${rel} (not a regular file)`);
    return { file: real, workerId: src.workerId, size: st.size };
  }

  private async serve(req: FetchOutputRequest__Output, call: grpc.ServerWritableStream<FetchOutputRequest__Output, OutputChunk>): Promise<void> {
    const { file, workerId, size } = await this.resolve(req);
    const offset = Number(req.offset || 0);
    if (!Number.isInteger(offset) || offset < 0 || offset > size)
      throw new InvalidArgumentError('offset', `must be between 0 and the file size ${size}, got ${req.offset}`);
    let cancelled = false;
    call.on('cancelled', () => (cancelled = true));
    const meter = this.opts.meter;
    const reader = { appId: req.appId, srcWorker: workerId, readerWorker: req.readerWorkerId ?? '', readerNode: req.readerNodeId ?? '' };
    const metered = meter?.begin(reader, Date.now());
    let complete = false;
    const fh = await openRegular(file);
    try {
      const buf = Buffer.alloc(OUTPUT_CHUNK);
      let pos = offset;
      let first = true;
      while (!cancelled) {
        const { bytesRead } = await fh.read(buf, 0, OUTPUT_CHUNK, pos);
        if (bytesRead === 0 && !first) break;
        pos += bytesRead;
        const chunk: OutputChunk = first
          ? { data: Buffer.from(buf.subarray(0, bytesRead)), size: String(size), workerId }
          : { data: Buffer.from(buf.subarray(0, bytesRead)) };
        first = false;
        meter?.add(metered, bytesRead);
        // A reader that takes nothing for a minute is ended (RESOURCE_EXHAUSTED): it calls again.
        await writeBounded(call, chunk, DEFAULT_STREAM_STALL_MS, 'FetchOutput');
        if (bytesRead === 0) break;
      }
      complete = !cancelled;
    } finally {
      meter?.end(metered, Date.now(), complete);
      await fh.close();
    }
    if (!cancelled) call.end();
  }

  /** The worker a request names: by id, or the succeeded attempt of (task, instance). */
  private async source(req: FetchOutputRequest__Output): Promise<Source> {
    const { appId } = req;
    if (req.workerId) {
      const w = this.opts.workers.byId(appId, req.workerId);
      if (w) return { workerId: w.workerId, succeeded: w.state === 'SUCCEEDED', state: w.state };
      const exit = await readExit(workerDir(this.opts.workDir, appId, req.workerId));
      if (exit === undefined) throw new NotFoundError('worker', `${appId}/${req.workerId} on this node`);
      return { workerId: req.workerId, succeeded: exit === 0, state: `exit code ${exit}` };
    }
    if (!req.task) throw new InvalidArgumentError('workerId', 'give a worker id, or a task and instance');
    const mine = this.opts.workers.list(appId).filter((w) => w.task === req.task && w.instance === req.instance);
    const ok = mine.filter((w) => w.state === 'SUCCEEDED').sort((a, b) => b.attempt - a.attempt)[0];
    if (ok) return { workerId: ok.workerId, succeeded: true, state: ok.state };
    const onDisk = await this.succeededOnDisk(appId, req.task, req.instance);
    if (onDisk) return { workerId: onDisk, succeeded: true, state: 'SUCCEEDED' };
    const latest = mine.sort((a, b) => b.attempt - a.attempt)[0];
    if (latest) return { workerId: latest.workerId, succeeded: false, state: latest.state };
    throw new NotFoundError('worker', `${appId}/${req.task}/${req.instance} on this node`);
  }

  /** A succeeded worker of (task, instance) from an earlier agent run, by its files. */
  private async succeededOnDisk(appId: string, task: string, instance: number): Promise<string | undefined> {
    const appDir = path.dirname(workerDir(this.opts.workDir, appId, 'x'));
    let names: string[];
    try {
      names = await fs.promises.readdir(appDir);
    } catch {
      return undefined;
    }
    let best: { workerId: string; attempt: number } | undefined;
    for (const n of names) {
      const dir = path.join(appDir, n);
      try {
        const cmd = JSON.parse((await readRegularAsync(path.join(dir, 'cmd.json'))) ?? '') as Partial<WorkerInfo>;
        if (cmd.task !== task || cmd.instance !== instance || typeof cmd.workerId !== 'string') continue;
        if ((await readExit(dir)) !== 0) continue;
        const a = cmd.attempt ?? 0;
        if (!best || a > best.attempt) best = { workerId: cmd.workerId, attempt: a };
      } catch {
        continue;
      }
    }
    return best?.workerId;
  }
}

/** A path relative to an output directory, normalized; throws naming `path` otherwise. */
export function checkRelativePath(p: string): string {
  if (!p) throw new InvalidArgumentError('path', "must name a file in the worker's output directory");
  if (p.includes('\0')) throw new InvalidArgumentError('path', 'must not contain NUL');
  if (path.isAbsolute(p)) throw new InvalidArgumentError('path', `must be relative to the worker's output directory, got ${JSON.stringify(p)}`);
  const norm = path.normalize(p);
  if (norm === '..' || norm.startsWith('../') || norm === '.')
    throw new InvalidArgumentError('path', `${JSON.stringify(p)} leaves the worker's output directory`);
  return norm;
}

/** The exit code a worker's wrapper recorded, or undefined when the dir or file is missing. */
async function readExit(dir: string): Promise<number | undefined> {
  const text = await readRegularAsync(path.join(dir, 'exit'));
  if (text === undefined) return undefined;
  const n = Number(text.trim());
  return text.trim() !== '' && Number.isInteger(n) ? n : undefined;
}
