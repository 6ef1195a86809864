/**
 * Records a heartbeat trace for `make bench-detectors`: a local cluster (embedded store, 3 agents)
 * whose master runs with `--record-heartbeats`, under a busy job mix (short sleeping and CPU-bound
 * workers submitted without pause), with agent 2 pinned to one core beside spinning processes from
 * the second third of the run on (a host under CPU pressure). Writes the trace to
 * `test/data/heartbeats/<name>.txt`.
 *
 *   node test/dist/bench/record-heartbeats.js [--seconds 180] [--name local-busy] [--spinners 3] [--unpinned]
 *
 * On the rack, pass `--record-heartbeats FILE` to the leader instead (the slowed-link case needs
 * the rack's `slow()`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { LocalCluster, REPO_ROOT } from '@fuxi/deploy';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { seconds: { type: 'string' }, name: { type: 'string' }, spinners: { type: 'string' }, unpinned: { type: 'boolean' } },
  });
  const spinnerCount = Number(values.spinners ?? 3);
  const seconds = Number(values.seconds ?? 180);
  const name = values.name ?? 'local-busy';
  const dir = mkdtempSync(join(tmpdir(), 'fuxi-hb-'));
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
    const submitting = (async () => {
      for (let i = 0; !stop; i++) {
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
    })();
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
  const out = join(REPO_ROOT, 'test', 'data', 'heartbeats');
  mkdirSync(out, { recursive: true });
  copyFileSync(file, join(out, `${name}.txt`));
  process.stdout.write(`trace written to ${join(out, `${name}.txt`)}\n`);
}

await main();
