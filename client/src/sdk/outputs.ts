/**
 * Outputs of finished workers, read over the network from the agents that hold them (the agent
 * data service, `AgentService.FetchOutput`). Nothing assumes a filesystem shared by hosts: a
 * worker writes its output files into `$FUXI_OUTPUT_DIR`; once it succeeded, its agent serves them.
 *
 * Inside a worker of a task with `dependsOn`, the AM has put where every upstream instance's output
 * is into `$FUXI_UPSTREAM`:
 *
 * ```ts
 * import { fetchUpstream, upstreamOutputs } from '@fuxi/client/worker';
 * for (const o of upstreamOutputs('map')) {                        // one per map instance
 *   const part = await fetchUpstream('map', o.instance, `part-${process.env.FUXI_INSTANCE}.json`);
 * }
 * ```
 *
 * From outside a job (a CLI, a test): `FuxiClient.fetchOutput(jobId, task, instance, path)`.
 *
 * An agent that does not answer (its host cut off from this one) is retried for `retryForMs`. A
 * worker the AM stops meanwhile (it runs the instance again elsewhere after a network partition)
 * gets SIGTERM, which ends a Node process at once unless it handles the signal; a worker that
 * does can pass `signal` to end the retries and the fetch in flight.
 */
import { FuxiError, InvalidArgumentError, NotFoundError } from '@fuxi/common';
import { loadFuxiProto, type FetchOutputRequest } from '@fuxi/proto';
import { connect, defaultTransport, retry, RpcError, sharedTransport, type Transport, transportFromEnv } from '@fuxi/rpc';
import { workerProgress } from './progress.js';

/** Where one upstream instance's output is. */
export interface UpstreamOutput {
  task: string;
  instance: number;
  /** The worker (succeeded attempt) whose output directory holds the files. */
  workerId: string;
  /** host:port of the agent that serves them ('' when the AM did not know it). */
  address: string;
  /** The node id of that agent ('' when the AM did not say). */
  nodeId: string;
}

/** Every instance of upstream task `task` of this worker (from `$FUXI_UPSTREAM`), by instance index. */
export function upstreamOutputs(task: string, env: NodeJS.ProcessEnv = process.env): UpstreamOutput[] {
  const raw = env.FUXI_UPSTREAM;
  if (!raw) throw new InvalidArgumentError('FUXI_UPSTREAM', 'is not set: only workers of a task with dependsOn get it');
  let all: Record<string, { hosts?: unknown; outputs?: unknown }>;
  try {
    all = JSON.parse(raw) as typeof all;
  } catch (e) {
    throw new InvalidArgumentError('FUXI_UPSTREAM', `is not JSON: ${(e as Error).message}`);
  }
  const t = all[task];
  if (!t)
    throw new InvalidArgumentError('task', `${JSON.stringify(task)} is not a task this one depends on (upstream: ${Object.keys(all).join(', ') || 'none'})`);
  const hosts = Array.isArray(t.hosts) ? (t.hosts as unknown[]).map(String) : [];
  const nodes = Array.isArray((t as { nodes?: unknown }).nodes) ? (t as { nodes: unknown[] }).nodes.map(String) : [];
  const outputs = Array.isArray(t.outputs) ? (t.outputs as unknown[]) : [];
  return outputs.map((o, instance) => {
    const [h, workerId] = Array.isArray(o) ? (o as [unknown, unknown]) : [-1, ''];
    const known = typeof h === 'number' && h >= 0;
    return { task, instance, workerId: String(workerId ?? ''), address: known ? (hosts[h] ?? '') : '', nodeId: known ? (nodes[h] ?? '') : '' };
  });
}

export interface FetchOptions {
  /** Keep retrying an agent that does not answer (UNAVAILABLE, DEADLINE_EXCEEDED) this long (default 30 s). */
  retryForMs?: number;
  /** Deadline of one fetch (default 60 s). */
  deadlineMs?: number;
  /** Ends the retries and the fetch in flight at once (e.g. from the worker's own SIGTERM handler). */
  signal?: AbortSignal;
  /** Who reads (sent to the serving agent, which measures the path for the reader's AM). */
  reader?: { workerId: string; nodeId: string };
  /** Called with the size of every chunk received. */
  onChunk?: (bytes: number) => void;
  /** Mutual TLS or plaintext (default: the process's; inside a worker, from its environment). */
  transport?: Transport;
}

/**
 * A worker's transport: the TLS files (or `FUXI_INSECURE=1`) its agent put into its environment
 * (`FUXI_TLS_CA`, `FUXI_TLS_CERT`, `FUXI_TLS_KEY`); a process its agent did not start (a test)
 * without them gets the process's.
 */
export function workerTransport(env: NodeJS.ProcessEnv = process.env): Transport {
  const cfg = transportFromEnv(env);
  return cfg.tls || cfg.insecure ? sharedTransport(cfg, 'FUXI_TLS_CA') : defaultTransport();
}

/** What to fetch from one agent: a worker by id, or the succeeded attempt of (task, instance). */
export type OutputRef = { appId: string; path: string } & ({ workerId: string } | { task: string; instance: number });

/**
 * Reads one output file from the agent at `address`; after a transient failure, resumes from the
 * byte it got to (100 ms doubling to 2 s between tries, for `retryForMs` from the first failure).
 */
export async function readOutput(address: string, ref: OutputRef, opts: FetchOptions = {}): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let got = 0;
  return retry(
    async () => {
      const client = connect(loadFuxiProto().AgentService, address, opts.transport);
      const req: FetchOutputRequest = {
        appId: ref.appId,
        path: ref.path,
        offset: String(got),
        ...(opts.reader ? { readerWorkerId: opts.reader.workerId, readerNodeId: opts.reader.nodeId } : {}),
        ...('workerId' in ref ? { workerId: ref.workerId } : { task: ref.task, instance: ref.instance }),
      };
      const stream = client.stream.FetchOutput(req, { deadlineMs: opts.deadlineMs ?? 60_000 });
      const cancel = () => stream.cancel();
      opts.signal?.addEventListener('abort', cancel, { once: true });
      try {
        for await (const c of stream) {
          if (c.data.length > 0) {
            chunks.push(c.data);
            got += c.data.length;
            opts.onChunk?.(c.data.length);
          }
        }
        return Buffer.concat(chunks, got);
      } finally {
        opts.signal?.removeEventListener('abort', cancel);
        stream.cancel();
        client.close();
      }
    },
    { retryForMs: opts.retryForMs ?? 30_000, ...(opts.signal ? { signal: opts.signal } : {}) },
  );
}

/** Inside a worker: file `path` of instance `instance` of upstream task `task`, from the host that wrote it. */
export async function fetchUpstream(task: string, instance: number, path: string, opts: FetchOptions & { env?: NodeJS.ProcessEnv } = {}): Promise<Buffer> {
  const env = opts.env ?? process.env;
  const appId = env.FUXI_APP_ID;
  if (!appId) throw new InvalidArgumentError('FUXI_APP_ID', 'is not set: fetchUpstream runs inside a worker');
  const o = upstreamOutputs(task, env)[instance];
  if (!o) throw new InvalidArgumentError('instance', `task ${JSON.stringify(task)} has no instance ${instance}`);
  if (!o.address || !o.workerId) throw new NotFoundError('output', `${task}/${instance}: the application master does not know where it ran`);
  // The path is measured (here, and by the serving agent) for the AM's speculation.
  const reader = env.FUXI_WORKER_ID && env.FUXI_NODE_ID ? { workerId: env.FUXI_WORKER_ID, nodeId: env.FUXI_NODE_ID } : undefined;
  const measured = workerProgress(env).beginPath(o.nodeId || o.address, o.workerId);
  let complete = false;
  try {
    const data = await readOutput(
      o.address,
      { appId, workerId: o.workerId, path },
      {
        ...opts,
        transport: opts.transport ?? workerTransport(env),
        ...(reader ? { reader } : {}),
        onChunk: (n) => {
          measured.add(n);
          opts.onChunk?.(n);
        },
      },
    );
    complete = true;
    return data;
  } catch (e) {
    if (e instanceof RpcError || e instanceof FuxiError) {
      e.message = `${task}/${instance} ${path} from ${o.address}: ${e.message}`;
    }
    throw e;
  } finally {
    measured.end(complete);
  }
}
