/**
 * Fuzzing every RPC over real gRPC: fast-check builds requests for every method of MasterService,
 * AgentService and AppMasterService from the wire descriptor (each field by its type: huge and
 * odd strings, negative and huge numbers, missing fields, deep repeated and map fields) and sends
 * them to a real local cluster (a master on the embedded store, an agent, a running job's AM).
 *
 * Afterwards every daemon still answers health and a normal job runs to success, and nothing is
 * half-made: no job, worker or store key exists that only a refused call described (every id in
 * them is a real one or appears in a call that was accepted).
 *
 * FUXI_FUZZ_RUNS sets the number of requests in all (default 4,000, spread over the methods);
 * FUXI_FUZZ_SEED replays a run; FUXI_FUZZ_ONLY=<method> fuzzes that method alone.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { loadFuxiProto } from '@fuxi/proto';
import { connect } from '@fuxi/rpc';
import { EmbeddedStore } from '@fuxi/store';
import type { FuxiClient } from '@fuxi/client';
import type { LocalCluster } from '@fuxi/deploy';
import { join } from 'node:path';
import { fuzzTargets, stringsOf } from '../fuzz-arbitraries.js';
import { job, startCluster, stopCluster, until } from '../harness.js';

const TOTAL_RUNS = Number(process.env.FUXI_FUZZ_RUNS ?? 4000);
const SEED = Number(process.env.FUXI_FUZZ_SEED ?? Date.now() % 1_000_000);
/** Above the agent's bounded wait for a newer master epoch to be confirmed (3 s): a call past it hangs. */
const CALL_DEADLINE_MS = 6000;
const IN_FLIGHT = 32;

type RawClient = {
  makeUnaryRequest: (...a: unknown[]) => unknown;
  makeServerStreamRequest: (...a: unknown[]) => { on(ev: string, cb: (...a: unknown[]) => void): void; cancel(): void };
  close(): void;
};
type MethodDef = { path: string; requestSerialize: (o: object) => Buffer; responseDeserialize: (b: Buffer) => object };

/** One call: resolves with 'ok', the gRPC status code, or 'local' (the client could not encode it). */
function callOnce(raw: RawClient, def: MethodDef, stream: boolean, req: object): Promise<'ok' | number | 'local'> {
  let body: Buffer;
  try {
    body = def.requestSerialize(req);
  } catch {
    return Promise.resolve('local');
  }
  const pass = (b: Buffer) => b;
  return new Promise((resolve) => {
    const deadline = new Date(Date.now() + (stream ? 300 : CALL_DEADLINE_MS));
    if (!stream) {
      raw.makeUnaryRequest(def.path, pass, pass, body, { deadline }, (err: { code: number } | null) => resolve(err ? err.code : 'ok'));
      return;
    }
    const call = raw.makeServerStreamRequest(def.path, pass, pass, body, { deadline });
    let settled = false;
    const done = (r: 'ok' | number) => {
      if (settled) return;
      settled = true;
      resolve(r);
    };
    call.on('data', () => {});
    call.on('error', (e) => done((e as { code: number }).code));
    call.on('end', () => done('ok'));
    call.on('status', (s) => done((s as { code: number }).code === 0 ? 'ok' : (s as { code: number }).code));
  });
}

/** grpc.health.v1 Check with an empty request: 'SERVING' (field 1 = 1, bytes 08 01), or what came instead. */
function health(raw: RawClient): Promise<string> {
  const pass = (b: Buffer) => b;
  const t0 = Date.now();
  return new Promise((resolve) => {
    raw.makeUnaryRequest(
      '/grpc.health.v1.Health/Check',
      pass,
      pass,
      Buffer.alloc(0),
      { deadline: new Date(Date.now() + 10_000) },
      (err: unknown, res: Buffer) =>
        resolve(err ? `${String(err)} after ${Date.now() - t0} ms` : res.equals(Buffer.from([8, 1])) ? 'SERVING' : `status bytes ${res.toString('hex')}`),
    );
  });
}

describe('fuzz: every RPC of every daemon (fast-check over the wire descriptor)', function () {
  this.timeout(240_000);
  let cluster: LocalCluster;
  let client: FuxiClient;
  let failed = false;
  let realJob = '';
  const accepted = new Set<string>();
  const clients: Record<string, RawClient> = {};
  const defs: Record<string, Record<string, MethodDef>> = {};
  const addresses: Record<string, string> = {};

  before(async () => {
    cluster = await startCluster('fuzz', { agents: 1, logLevel: 'info' });
    client = cluster.client();
    // A running job: its AM is the AppMasterService under fuzz.
    ({ jobId: realJob } = await client.submit(
      job({ name: 'fuzz-victim', tasks: [{ name: 'sleep', instances: 1, resources: { cpu: 0.1, memory: 64 }, command: ['sleep', '300'] }] }),
    ));
    const running = await until('the job running with its AM', async () => {
      const j = await client.get(realJob);
      return j.state === 'JOB_STATE_RUNNING' && j.amAddress ? j : undefined;
    });
    const nodes = await client.nodes();
    addresses.MasterService = cluster.masterAddress;
    addresses.AgentService = nodes[0]!.node!.address;
    addresses.AppMasterService = running.amAddress;
    const proto = loadFuxiProto();
    for (const s of ['MasterService', 'AgentService', 'AppMasterService'] as const) {
      // As the cluster's admin (mutual TLS): every request reaches the daemon's checks.
      const c = connect(proto[s] as Parameters<typeof connect>[0], addresses[s]!, cluster.transport());
      clients[s] = c.raw as unknown as RawClient;
      defs[s] = proto[s].service as unknown as Record<string, MethodDef>;
    }
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    client?.close();
    for (const c of Object.values(clients)) c.close();
    if (cluster) await stopCluster(cluster, failed);
  });

  it(`survives ${TOTAL_RUNS} requests spread over every method (seed ${SEED})`, async () => {
    const only = process.env.FUXI_FUZZ_ONLY;
    // The AM first: the master's admin calls may drain its node (a DrainNode whose deadline has
    // passed moves the AM at once; seed 541616), and a grant table the agent accepts may revoke
    // its slot; either way the master starts a new AM attempt elsewhere, at another address.
    const order = { AppMasterService: 0, MasterService: 1, AgentService: 2 };
    const all = fuzzTargets()
      .filter((t) => !only || t.method === only)
      .sort((a, b) => order[a.service] - order[b.service]);
    expect(all.length).to.be.greaterThan(only ? 0 : 30);
    const perMethod = Math.max(20, Math.ceil(TOTAL_RUNS / all.length));
    const outcomes: Record<string, Record<string, number>> = {};
    const started = Date.now();
    for (const [i, t] of all.entries()) {
      const samples = fc.sample(t.arb, { numRuns: perMethod, seed: SEED + i }) as object[];
      const tally: Record<string, number> = {};
      const key = `${t.service}.${t.method}`;
      // Many in flight at once: races show, and the agent's bounded waits for an unconfirmed master
      // epoch (3 s each) overlap instead of adding up.
      for (let k = 0; k < samples.length; k += IN_FLIGHT) {
        const batch = samples.slice(k, k + IN_FLIGHT);
        const results = await Promise.all(batch.map((req) => callOnce(clients[t.service]!, defs[t.service]![t.method]!, t.stream, req)));
        results.forEach((r, j) => {
          tally[String(r)] = (tally[String(r)] ?? 0) + 1;
          if (r === 'ok') stringsOf(batch[j], accepted);
        });
      }
      outcomes[key] = tally;
      // The daemon under fuzz still answers after each method's batch: a crash names its method.
      expect(await health(clients[t.service]!), `${t.service} still healthy after ${key} (seed ${SEED})`).to.equal('SERVING');
      // Unary calls that hang until their deadline (code 4) are a hang, not a refusal.
      if (!t.stream) expect(tally['4'] ?? 0, `${key}: calls that hung (seed ${SEED}): ${JSON.stringify(tally)}`).to.be.at.most(0);
    }
    process.stderr.write(`      fuzz: ${all.length} methods x ${perMethod} requests in ${Math.round((Date.now() - started) / 1000)} s (seed ${SEED})\n`);
  });

  it('afterwards every daemon answers health and a normal job runs to success', async () => {
    for (const s of ['MasterService', 'AgentService']) expect(await health(clients[s]!), `${s} healthy`).to.equal('SERVING');
    // The fuzz calls as the cluster's admin: an accepted CordonNode, DrainNode or CreateTestbed
    // with a real name is an operator's decision, not damage. Undo them before the normal job.
    for (const n of await client.nodes()) if (n.node?.nodeId) await client.uncordon(n.node.nodeId);
    for (const tb of await client.testbeds()) await client.deleteTestbed(tb.name);
    // The victim's AM: the one running now (a new attempt if an accepted grant table revoked the
    // first), unless an accepted KillJob named it.
    const victimKilled = accepted.has(realJob) && (await client.get(realJob)).state === 'JOB_STATE_KILLED';
    if (!victimKilled) {
      const running = await until('the victim job running with an AM', async () => {
        const j = await client.get(realJob);
        return j.state === 'JOB_STATE_RUNNING' && j.amAddress ? j : undefined;
      });
      const am = connect(loadFuxiProto().AppMasterService as Parameters<typeof connect>[0], running.amAddress, cluster.transport());
      try {
        expect(await health(am.raw as unknown as RawClient), 'AppMasterService healthy').to.equal('SERVING');
      } finally {
        am.close();
      }
    }
    const { jobId } = await client.submit(
      job({ name: 'after-fuzz', tasks: [{ name: 't', instances: 2, resources: { cpu: 0.1, memory: 64 }, command: ['sh', '-c', 'echo ok'] }] }),
    );
    accepted.add(jobId);
    let last;
    for await (const j of client.watch(jobId)) last = j;
    expect(last?.state, last?.message).to.equal('JOB_STATE_SUCCEEDED');
    if (!victimKilled) expect((await client.get(realJob)).state).to.equal('JOB_STATE_RUNNING');
  });

  it('nothing half-made: every job and worker is a real one or one an accepted call described', async () => {
    const real = new Set([realJob, ...accepted]);
    const jobs = await client.list();
    expect(jobs.map((j) => j.jobId).filter((id) => !real.has(id))).to.deep.equal([]);
    const agent = connect(loadFuxiProto().AgentService, addresses.AgentService!, cluster.transport());
    try {
      const { workers } = await agent.ListWorkers({ appId: '' });
      const strangers = workers.filter((w) => !real.has(w.appId));
      expect(strangers.map((w) => `${w.appId}/${w.workerId} ${w.state}`)).to.deep.equal([]);
    } finally {
      agent.close();
    }
  });

  it('nothing half-made in the store: every key names a real id or one an accepted call carried', async () => {
    const nodeIds = new Set((await client.nodes()).map((n) => n.node?.nodeId ?? ''));
    client.close();
    await cluster.stop({ killWorkers: true });
    const store = await EmbeddedStore.open(join(cluster.opts.dir, 'master-data'));
    try {
      const strange: string[] = [];
      for (const kv of await store.list('')) {
        const [kind, id] = kv.key.split('/');
        if (kind === 'jobs' || kind === 'apps') {
          if (id !== realJob && !accepted.has(id ?? '')) strange.push(kv.key);
        } else if (kind === 'agents' || kind === 'nodeadmin') {
          if (!nodeIds.has(id ?? '') && !accepted.has(id ?? '')) strange.push(kv.key);
        }
      }
      expect(strange).to.deep.equal([]);
    } finally {
      await store.close();
    }
  });
});
