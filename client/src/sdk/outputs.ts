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
import { connect, retry, RpcError } from '@fuxi/rpc';

/** Where one upstream instance's output is. */
export interface UpstreamOutput {
  task: string;
  instance: number;
  /** The worker (succeeded attempt) whose output directory holds the files. */
  workerId: string;
  /** host:port of the agent that serves them ('' when the AM did not know it). */
  address: string;
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
  const outputs = Array.isArray(t.outputs) ? (t.outputs as unknown[]) : [];
  return outputs.map((o, instance) => {
    const [h, workerId] = Array.isArray(o) ? (o as [unknown, unknown]) : [-1, ''];
    return { task, instance, workerId: String(workerId ?? ''), address: typeof h === 'number' && h >= 0 ? (hosts[h] ?? '') : '' };
  });
}

export interface FetchOptions {
  /** Keep retrying an agent that does not answer (UNAVAILABLE, DEADLINE_EXCEEDED) this long (default 30 s). */
  retryForMs?: number;
  /** Deadline of one fetch (default 60 s). */
  deadlineMs?: number;
  /** Ends the retries and the fetch in flight at once (e.g. from the worker's own SIGTERM handler). */
  signal?: AbortSignal;
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
      const client = connect(loadFuxiProto().AgentService, address);
      const req: FetchOutputRequest = {
        appId: ref.appId,
        path: ref.path,
        offset: String(got),
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
  try {
    return await readOutput(o.address, { appId, workerId: o.workerId, path }, opts);
  } catch (e) {
    if (e instanceof RpcError || e instanceof FuxiError) {
      e.message = `${task}/${instance} ${path} from ${o.address}: ${e.message}`;
    }
    throw e;
  }
}
