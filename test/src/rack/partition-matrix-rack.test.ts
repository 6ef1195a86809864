/**
 * Partial network partitions on the rack, one cell of CASPR's Table I (seed 000) at a time: a word
 * count whose reducers fetch every map's output from the host that wrote it (the agent data
 * service), with a link cut by nftables before the job starts ("pre") or while its maps run ("mid"):
 *
 * - W-W: two hosts running workers of the job;
 * - D-W: the AM's host and a host running its workers ("pre": a host cut from all its peers but one,
 *   so an AM placed there would be cut from its workers);
 * - M-W: the masters and an agent host its peers still reach (partitioned, not lost: its workers
 *   run on, nothing of it is re-run; "mid" holds the maps past the masters' agentTimeoutMs);
 * - M-D: the masters and the AM's host;
 * - isolated: one host cut from everything (timing out, then lost, as before).
 *
 * Each cell asserts the job succeeds with the correct counts, no healthy worker is restarted, and
 * each instance re-runs at most once; and writes one row of `bench-results/partition-matrix.json`
 * (`{pair, when, jobSucceeded, reExecutions, healthyWorkersRestarted, haltedMs}`). `haltedMs` is the
 * longest stretch without an instance succeeding, from the moment the maps are let go (the cut,
 * or the end of a hold) to the end of the job.
 *
 * With FUXI_CONNECTIVITY_AWARE=0 the masters run with `connectivityAware: false` and agents do not
 * probe (the behaviour before connectivity awareness): the cells are run and recorded under
 * `unaware` without failing the test (`make partition-matrix-unaware`).
 */
import { expect } from 'chai';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FuxiClient, JobInfo, JobSpec } from '@fuxi/client';
import { REPO_ROOT, expectedCounts, wordcountResult, removeTree } from '@fuxi/deploy';
import type { WorkerStatus__Output } from '@fuxi/proto';
import { sleep, until } from '../harness.js';
import { gatedWordCount as gatedWordCountOn, gatePortBase, openGate } from './gate.js';
import { MASTER_HOSTS, RackCluster } from './rack-cluster.js';

const AWARE = process.env.FUXI_CONNECTIVITY_AWARE !== '0';
const AGENT_HOSTS = ['a1', 'a2', 'a3', 'a4'] as const;
/** The masters' agentTimeoutMs: a node silent this long (and vouched for by no peer) is lost. */
const AGENT_TIMEOUT_MS = 10_000;
/** A job that does not end within this is recorded as halted (the unaware run). */
const JOB_LIMIT_MS = AWARE ? 150_000 : 90_000;

const PAIRS = ['W-W', 'D-W', 'M-W', 'M-D', 'isolated'] as const;
type Pair = (typeof PAIRS)[number];
type When = 'pre' | 'mid';

interface Row {
  pair: Pair;
  when: When;
  jobSucceeded: boolean;
  reExecutions: number;
  /** The most any one instance re-ran. */
  maxReExecutionsPerInstance: number;
  healthyWorkersRestarted: number;
  haltedMs: number;
  /** The links cut (host names of the rack). */
  cut: string[];
  /** From the submission to the end of the job. */
  jobMs: number;
  message: string;
}

type Worker = WorkerStatus__Output & { host: string };

describe(`partial partitions on the rack: every cell of Table I (connectivity awareness ${AWARE ? 'on' : 'off'})`, function () {
  this.timeout(600_000);
  let rc: RackCluster | undefined;
  let client: FuxiClient;
  let dir = '';
  let failed = false;
  let gatePort = gatePortBase(1000);
  const rows: Row[] = [];

  before(async function () {
    this.timeout(180_000);
    dir = mkdtempSync(join(tmpdir(), 'fuxi-partitions-'));
    chmodSync(dir, 0o711); // the agents' unprivileged worker user passes through to its directories
    rc = await RackCluster.start({
      dir,
      agents: AGENT_HOSTS.length,
      agentHosts: AGENT_HOSTS.length,
      leaseTtlSec: 3,
      heartbeatIntervalMs: 300,
      amHeartbeatIntervalMs: 500,
      // Timing out after 3 heartbeats, lost after 10 s: long enough for peers to vouch for a node
      // only the masters cannot hear, short enough for the isolated cells.
      agentTimeoutMs: AGENT_TIMEOUT_MS,
      amTimeoutMs: 5_000,
      agentCpu: '1.2',
      agentMemory: '2Gi',
      logLevel: 'debug',
      ...(AWARE ? {} : { masterArgs: ['--connectivity-aware=false'], agentArgs: ['--probe', 'false'] }),
    });
    client = rc.ha.client({ retryForMs: 60_000 });
    await rc.ha.waitForNodes(AGENT_HOSTS.length, 60_000);
  });
  afterEach(async function () {
    if (this.currentTest?.state === 'failed') failed = true;
    await healAll();
  });
  after(async function () {
    this.timeout(120_000);
    writeRows();
    client?.close();
    await rc?.stop();
    if (dir && !failed && !process.env.FUXI_KEEP_LOGS) removeTree(dir);
    else if (dir) process.stderr.write(`  (rack logs kept in ${dir})\n`);
  });

  // ------------------------------------------------------------------ helpers

  /** node-1 runs on a1, node-2 on a2, ... (rackPlacement: agent i on agent host i % hosts). */
  const hostOf = (nodeId: string): string => {
    const i = Number(/^node-(\d+)$/.exec(nodeId)?.[1] ?? NaN);
    return Number.isFinite(i) ? (AGENT_HOSTS[(i - 1) % AGENT_HOSTS.length] ?? nodeId) : nodeId;
  };

  const cuts: Array<[string, string]> = [];
  async function cut(a: string, b: string): Promise<void> {
    await rc!.rack.cut(a, b);
    cuts.push([a, b]);
  }
  async function healAll(): Promise<void> {
    if (!rc) return;
    for (const [a, b] of cuts.splice(0)) await rc.rack.heal(a, b).catch(() => undefined);
    await rc.rack.healAll().catch(() => undefined);
    // Every node ready again, no broken link left: the next cell starts from a whole rack.
    await until(
      'every node ready with no broken link',
      async () => {
        const nodes = await client.nodes();
        const ok = nodes.length >= AGENT_HOSTS.length && nodes.every((n) => n.state === 'ready' && (n.unreachablePeers ?? []).length === 0);
        return ok || undefined;
      },
      90_000,
      500,
    ).catch((e: unknown) => process.stderr.write(`  (rack not whole after a cell: ${String(e)})\n`));
  }

  async function workers(appId: string): Promise<Worker[]> {
    const out: Worker[] = [];
    for (const { agent, state } of await rc!.ha.agentStates())
      for (const w of state.workers) if (w.appId === appId) out.push({ ...w, host: hostOf(agent.nodeId) });
    return out;
  }

  const gatedWordCount = (name: string, port: number): JobSpec => gatedWordCountOn(name, rc!.rack.bridgeIp, port);
  const release = (port: number): Promise<Server> => openGate(rc!.rack.bridgeIp, port);

  const succeededCount = (j: JobInfo): number => j.tasks.reduce((s, t) => s + t.succeeded, 0);

  /**
   * Follows the job to its end (or JOB_LIMIT_MS): its final info and the longest stretch, from
   * `fromMs`, in which no instance succeeded (the halt).
   */
  async function follow(jobId: string, fromMs: number): Promise<{ info: JobInfo | undefined; haltedMs: number }> {
    let last = fromMs;
    let done = -1;
    let halted = 0;
    let info: JobInfo | undefined;
    const end = fromMs + JOB_LIMIT_MS;
    while (Date.now() < end) {
      info = await client.get(jobId).catch(() => info);
      if (info) {
        const n = succeededCount(info);
        if (n > done) {
          done = n;
          halted = Math.max(halted, Date.now() - last);
          last = Date.now();
        }
        if (['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_KILLED'].includes(info.state)) return { info, haltedMs: halted };
      }
      await sleep(250);
    }
    halted = Math.max(halted, Date.now() - last);
    await client.kill(jobId, 'partition matrix: the job did not end in time').catch(() => undefined);
    return { info, haltedMs: halted };
  }

  /**
   * Runs one cell: `before` cuts links before the submission (pre) or after the maps run (mid),
   * choosing them from where the job runs; `affected` names the hosts whose workers the partition
   * makes useless (their re-runs are re-executions; any other worker restarted is a healthy one).
   */
  async function runCell(
    pair: Pair,
    when: When,
    act: (where: { amHost: string; mapHosts: string[] }) => Promise<string[]>,
    check?: (where: { amHost: string; hosts: string[]; info: JobInfo }) => void,
  ): Promise<void> {
    const port = gatePort++;
    const spec = gatedWordCount(`part-${pair.toLowerCase()}-${when}`, port);
    let gate: Server | undefined;
    let affected: string[] = [];
    let before = new Map<string, Worker>();
    let cutAt = 0;
    try {
      if (when === 'pre') {
        affected = await act({ amHost: '', mapHosts: [] });
        cutAt = Date.now();
        gate = await release(port);
      }
      const submittedAt = Date.now();
      const { jobId } = await client.submit(spec);
      if (when === 'mid') {
        const running = await until(
          `12 maps of ${spec.jobId} running`,
          async () => {
            const ws = (await workers(jobId)).filter((w) => w.task === 'map' && w.state === 'WORKER_STATE_RUNNING' && w.pid > 0);
            return ws.length === 12 ? ws : undefined;
          },
          120_000,
          250,
        );
        const info = await client.get(jobId);
        const amHost = hostOf(info.amNodeId);
        before = new Map((await workers(jobId)).filter((w) => w.state === 'WORKER_STATE_RUNNING').map((w) => [w.workerId, w] as const));
        affected = await act({ amHost, mapHosts: [...new Set(running.map((w) => w.host))].sort() });
        cutAt = Date.now();
        gate = await release(port);
      }
      const { info, haltedMs } = await follow(jobId, cutAt);
      const jobMs = Date.now() - submittedAt;
      const ok = info?.state === 'JOB_STATE_SUCCEEDED';
      let correct = ok;
      if (ok) {
        const counts = await wordcountResult(client, jobId, spec).catch(() => undefined);
        correct =
          !!counts && JSON.stringify(Object.fromEntries([...counts].sort())) === JSON.stringify(Object.fromEntries([...(await expectedCounts(spec))].sort()));
      }
      // Re-executions: attempts beyond the first of every instance the agents know of, and AM restarts.
      await healAll();
      const after = await workers(jobId);
      const attempts = new Map<string, number>();
      for (const w of after)
        if (w.task !== '__am__') attempts.set(`${w.task}.${w.instance}`, Math.max(attempts.get(`${w.task}.${w.instance}`) ?? 0, w.attempt));
      const reruns = [...attempts.values()].map((a) => Math.max(0, a - 1));
      const amRestarts = Math.max(0, (info?.amAttempt ?? 1) - 1);
      const byId = new Map(after.map((w) => [w.workerId, w] as const));
      let healthyRestarted = 0;
      for (const [id, w] of before) {
        if (affected.includes(w.host) || w.task === '__am__') continue;
        const now = byId.get(id);
        const rerun = (attempts.get(`${w.task}.${w.instance}`) ?? 0) > w.attempt;
        if (rerun || (now && now.state !== 'WORKER_STATE_SUCCEEDED' && now.state !== 'WORKER_STATE_RUNNING')) healthyRestarted++;
      }
      const row: Row = {
        pair,
        when,
        jobSucceeded: ok && correct,
        reExecutions: reruns.reduce((s, n) => s + n, 0) + amRestarts,
        maxReExecutionsPerInstance: Math.max(0, amRestarts, ...reruns),
        healthyWorkersRestarted: healthyRestarted,
        haltedMs,
        cut: cutsSeen.splice(0),
        jobMs,
        message: info?.message ?? '',
      };
      rows.push(row);
      process.stdout.write(`      ${JSON.stringify(row)}\n`);
      if (!AWARE) return;
      expect(row.jobSucceeded, `the job succeeded with the correct counts (${row.message})`).to.equal(true);
      expect(row.healthyWorkersRestarted, 'healthy workers restarted').to.equal(0);
      expect(row.maxReExecutionsPerInstance, 'the most one instance re-ran').to.be.at.most(1);
      if (check && info) {
        const hosts = [...new Set(after.filter((w) => w.task !== '__am__').map((w) => w.host))].sort();
        check({ amHost: hostOf(info.amNodeId), hosts, info });
      }
    } finally {
      gate ??= await release(port).catch(() => undefined);
      gate?.close();
    }
  }

  /** The links cut in the current cell, for its row. */
  const cutsSeen: string[] = [];
  async function record(a: string, b: string): Promise<void> {
    await cut(a, b);
    cutsSeen.push(`${a}-${b}`);
  }
  async function recordFromMasters(h: string): Promise<void> {
    for (const m of MASTER_HOSTS) await record(h, m);
  }

  /** Waits until the leader's graph shows the cut (so "pre" really is before the job). */
  async function seen(what: string, pred: (nodes: Awaited<ReturnType<FuxiClient['nodes']>>) => boolean): Promise<void> {
    if (!AWARE) {
      await sleep(3000);
      return;
    }
    await until(what, async () => pred(await client.nodes()) || undefined, 60_000, 250);
  }
  const nodeOf = (host: string) => `node-${AGENT_HOSTS.indexOf(host as (typeof AGENT_HOSTS)[number]) + 1}`;

  /** Two hosts of the job that reach each other must stay mutually reachable: the placement check. */
  function mutuallyReachable(hosts: string[], broken: Array<[string, string]>): void {
    for (const [a, b] of broken)
      expect(hosts.includes(a) && hosts.includes(b), `the job used both ${a} and ${b}, which cannot reach each other`).to.equal(false);
  }

  // ------------------------------------------------------------------ the cells

  it('W-W before the job: placed on hosts that reach one another', async () => {
    await runCell(
      'W-W',
      'pre',
      async () => {
        await record('a1', 'a2');
        await seen('a1 - a2 broken', (ns) => ns.some((n) => n.node?.nodeId === nodeOf('a1') && (n.unreachablePeers ?? []).includes(nodeOf('a2'))));
        return [];
      },
      ({ amHost, hosts }) => mutuallyReachable([amHost, ...hosts], [['a1', 'a2']]),
    );
  });

  it('W-W while it runs: one side re-runs, once', async () => {
    await runCell('W-W', 'mid', async ({ amHost, mapHosts }) => {
      const [x, y] = mapHosts.filter((h) => h !== amHost);
      expect(y, `two map hosts besides the AM's (${amHost}): ${mapHosts.join(', ')}`).to.not.equal(undefined);
      await record(x!, y!);
      return [x!, y!];
    });
  });

  it('D-W before the job: the AM is not placed where it cannot reach its workers', async () => {
    await runCell(
      'D-W',
      'pre',
      async () => {
        await record('a1', 'a2');
        await record('a1', 'a3');
        await seen('a1 cut from a2 and a3', (ns) => (ns.find((n) => n.node?.nodeId === nodeOf('a1'))?.unreachablePeers ?? []).length >= 2);
        return [];
      },
      ({ amHost, hosts }) =>
        mutuallyReachable(
          [amHost, ...hosts],
          [
            ['a1', 'a2'],
            ['a1', 'a3'],
          ],
        ),
    );
  });

  it("D-W while it runs: the workers cut from the AM's host re-run, once", async () => {
    await runCell('D-W', 'mid', async ({ amHost, mapHosts }) => {
      const x = mapHosts.find((h) => h !== amHost);
      expect(x, `a map host besides the AM's (${amHost})`).to.not.equal(undefined);
      await record(amHost, x!);
      return [x!];
    });
  });

  it('M-W before the job: a host only the masters cannot reach is partitioned, and nothing is placed there', async () => {
    await runCell(
      'M-W',
      'pre',
      async () => {
        await recordFromMasters('a1');
        await seen('node-1 partitioned', (ns) => ns.find((n) => n.node?.nodeId === nodeOf('a1'))?.state === 'partitioned');
        return [];
      },
      ({ amHost, hosts }) => expect([amHost, ...hosts], 'hosts of the job').to.not.include('a1'),
    );
  });

  it('M-W while it runs: the workers of a host the masters cannot reach run on past agentTimeoutMs, never lost, nothing re-run', async () => {
    await runCell('M-W', 'mid', async ({ amHost, mapHosts }) => {
      const x = mapHosts.find((h) => h !== amHost);
      expect(x, `a map host besides the AM's (${amHost})`).to.not.equal(undefined);
      await recordFromMasters(x!);
      // The maps stay held past the masters' agentTimeoutMs, so that a node taken for dead would be
      // lost and its work re-run; partitioned, it is neither.
      await sleep(AGENT_TIMEOUT_MS + 3000);
      if (AWARE) {
        const state = (await client.nodes()).find((n) => n.node?.nodeId === nodeOf(x!))?.state;
        expect(state, `${nodeOf(x!)} after ${AGENT_TIMEOUT_MS + 3000} ms cut from the masters`).to.equal('partitioned');
      }
      return [];
    });
  });

  it('M-D before the job: the AM is not placed on a host the masters cannot reach', async () => {
    await runCell(
      'M-D',
      'pre',
      async () => {
        await recordFromMasters('a2');
        await seen('node-2 partitioned', (ns) => ns.find((n) => n.node?.nodeId === nodeOf('a2'))?.state === 'partitioned');
        return [];
      },
      ({ amHost }) => expect(amHost, 'the AM host').to.not.equal('a2'),
    );
  });

  it('M-D while it runs: the AM moves (one re-execution), its workers run on', async () => {
    await runCell('M-D', 'mid', async ({ amHost }) => {
      await recordFromMasters(amHost);
      return [];
    });
  });

  it('a host isolated before the job: nothing is placed there', async () => {
    await runCell(
      'isolated',
      'pre',
      async () => {
        await rc!.rack.isolate('a3');
        cutsSeen.push('a3-*');
        await seen('node-3 not ready', (ns) => ns.find((n) => n.node?.nodeId === nodeOf('a3'))?.state !== 'ready');
        return ['a3'];
      },
      ({ amHost, hosts }) => expect([amHost, ...hosts], 'hosts of the job').to.not.include('a3'),
    );
  });

  it('a host isolated while the job runs: timing out, then lost, its work re-run once', async () => {
    await runCell('isolated', 'mid', async ({ amHost, mapHosts }) => {
      const x = mapHosts.find((h) => h !== amHost);
      expect(x, `a map host besides the AM's (${amHost})`).to.not.equal(undefined);
      await rc!.rack.isolate(x!);
      cutsSeen.push(`${x!}-*`);
      return [x!];
    });
  });

  function writeRows(): void {
    const out = join(REPO_ROOT, 'bench-results', 'partition-matrix.json');
    mkdirSync(join(REPO_ROOT, 'bench-results'), { recursive: true });
    let doc: Record<string, unknown> = {};
    try {
      doc = JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown>;
    } catch {
      /* first run */
    }
    // A run of some cells (mocha -g) replaces their rows and keeps the others of the same mode.
    const key = AWARE ? 'aware' : 'unaware';
    const earlier = ((doc[key] as { rows?: Row[] } | undefined)?.rows ?? []).filter((r) => !rows.some((x) => x.pair === r.pair && x.when === r.when));
    const order = (r: Row): number => PAIRS.indexOf(r.pair) * 2 + (r.when === 'pre' ? 0 : 1);
    const all = [...earlier, ...rows].sort((a, b) => order(a) - order(b));
    doc[key] = { at: new Date().toISOString(), rows: all };
    if (AWARE) doc.rows = all;
    writeFileSync(out, `${JSON.stringify(doc, null, 2)}\n`);
  }
});
