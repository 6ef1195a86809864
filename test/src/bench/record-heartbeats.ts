/**
 * Records a heartbeat trace for `make bench-detectors`: a local cluster (embedded store, 3 agents)
 * whose master runs with `--record-heartbeats`, under a busy job mix (short sleeping and CPU-bound
 * workers submitted without pause), with agent 2 pinned to one core beside spinning processes from
 * the second third of the run on (a host under CPU pressure). Writes the trace to
 * `test/data/heartbeats/<name>.txt`.
 *
 *   node test/dist/bench/record-heartbeats.js [--seconds 180] [--name local-busy] [--spinners 3] [--unpinned]
 *
 * `--rack` records on the rack instead (default name `rack-pressure`): etcd, three masters and
 * three agent hosts, each in its own network namespace, the same job mix; from the second third of
 * the run on, host a2's agent is pinned to one core beside spinning processes started in its
 * namespace, and host a3's link is slowed to 1 Mbit/s (tc tbf).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { FuxiClient } from '@fuxi/client';
import { LocalCluster, REPO_ROOT } from '@fuxi/deploy';
import { RackCluster } from '../rack/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Submits the job mix (short sleeping and CPU-bound workers) until `stop()` says so. */
async function jobMix(client: FuxiClient, stop: () => boolean): Promise<void> {
  for (let i = 0; !stop(); i++) {
    const cpu = i % 3 === 0;
    await client
      .submit({
        name: `mix-${i}`,
        tasks: [
          {
            name: 't',
            instances: 4,
            resources: { cpu: 0.5, memory: 64 },
            command: cpu ? ['sh', '-c', 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'] : ['sleep', '2'],
          },
        ],
      } as never)
      .catch(() => undefined);
    await sleep(300);
  }
}

function keep(file: string, name: string): void {
  const out = join(REPO_ROOT, 'test', 'data', 'heartbeats');
  mkdirSync(out, { recursive: true });
  copyFileSync(file, join(out, `${name}.txt`));
  process.stdout.write(`trace written to ${join(out, `${name}.txt`)}\n`);
}

async function onRack(seconds: number, name: string, spinnerCount: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fuxi-hb-rack-'));
  // Workers run as another user (nobody): they must be able to pass through.
  chmodSync(dir, 0o711);
  const file = join(dir, 'heartbeats.txt');
  const rc = await RackCluster.start({
    dir,
    agents: 3,
    agentHosts: 3,
    agentCpu: '4',
    agentMemory: '4Gi',
    heartbeatIntervalMs: 1000,
    masterArgs: ['--record-heartbeats', file],
  });
  let stop = false;
  const spinners: ChildProcess[] = [];
  try {
    const client = rc.ha.client({ retryForMs: 60_000 });
    const submitting = jobMix(client, () => stop);
    const t0 = Date.now();
    await sleep((seconds * 1000) / 3);
    const agent2 = rc.ha.agents[1]!;
    await rc.rack.exec('a2', 'taskset', ['-a', '-p', '-c', '0', String(agent2.pid)]);
    for (let i = 0; i < spinnerCount; i++) spinners.push(rc.rack.spawn('a2', 'taskset', ['-c', '0', 'sh', '-c', 'while :; do :; done'], { detached: true }));
    await rc.rack.slow('a3', '1mbit');
    process.stderr.write(`cpu pressure on a2 (${agent2.nodeId}) and a 1 Mbit/s link on a3 from ${Math.round((Date.now() - t0) / 1000)} s\n`);
    await sleep(Math.max(0, seconds * 1000 - (Date.now() - t0)));
    stop = true;
    await submitting;
    client.close();
  } finally {
    for (const s of spinners) if (s.pid) process.kill(s.pid, 'SIGKILL');
    await rc.rack.unslow('a3').catch(() => undefined);
    await rc.stop();
  }
  keep(file, name);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { seconds: { type: 'string' }, name: { type: 'string' }, spinners: { type: 'string' }, unpinned: { type: 'boolean' }, rack: { type: 'boolean' } },
  });
  const spinnerCount = Number(values.spinners ?? 3);
  const seconds = Number(values.seconds ?? 180);
  if (values.rack) return onRack(seconds, values.name ?? 'rack-pressure', spinnerCount);
  const name = values.name ?? 'local-busy';
  const dir = mkdtempSync(join(tmpdir(), 'fuxi-hb-'));
  // Workers run as another user (nobody): they must be able to pass through.
  chmodSync(dir, 0o711);
  const file = join(dir, 'heartbeats.txt');
  const cluster = await LocalCluster.start({
    dir,
    agents: 3,
    agentCpu: '4',
    agentMemory: '4Gi',
    heartbeatIntervalMs: 1000,
    masterArgs: ['--record-heartbeats', file],
  });
  const spinners: ChildProcess[] = [];
  let stop = false;
  try {
    const client = cluster.client();
    const submitting = jobMix(client, () => stop);
    const t0 = Date.now();
    await sleep((seconds * 1000) / 3);
    // Agent 2's host under CPU pressure: pinned to core 0 with spinning processes (--unpinned: the
    // spinners load every core, the whole machine is overloaded).
    const agent2 = cluster.agents[1]!;
    if (!values.unpinned) spawn('taskset', ['-a', '-p', '-c', '0', String(agent2.pid)], { stdio: 'ignore' });
    for (let i = 0; i < spinnerCount; i++) {
      const argv = ['sh', '-c', 'while :; do :; done'];
      const s = values.unpinned
        ? spawn(argv[0]!, argv.slice(1), { stdio: 'ignore', detached: true })
        : spawn('taskset', ['-c', '0', ...argv], { stdio: 'ignore', detached: true });
      spinners.push(s);
    }
    process.stderr.write(`cpu pressure on ${agent2.nodeId} from ${Math.round((Date.now() - t0) / 1000)} s\n`);
    await sleep(Math.max(0, seconds * 1000 - (Date.now() - t0)));
    stop = true;
    await submitting;
  } finally {
    for (const s of spinners) if (s.pid) process.kill(-s.pid, 'SIGKILL');
    await cluster.stop({ killWorkers: true });
  }
  keep(file, name);
}

await main();
