/**
 * The whole job lifecycle on one host, with real processes: a master, three agents, each job's
 * own application master and real worker processes, all over gRPC on loopback.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadFuxiProto } from '@fuxi/proto';
import { connect, RpcError } from '@fuxi/rpc';
import { BIN, expectedCounts, wordcountResult, type LocalCluster } from '@fuxi/deploy';
import type { FuxiClient } from '@fuxi/client';
import { isAlive, job, sleep, startCluster, stopCluster, until } from '../harness.js';

/** A process's state, parent and command line from /proc (for a failure's message). */
function procSummary(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    return `state ${state}, parent ${ppid}, ${cmd || '(no command line)'}`;
  } catch (e) {
    return `unreadable (${(e as Error).message})`;
  }
}

const run = promisify(execFile);
const exampleDir = join(BIN.master, '..', '..', '..', '..', 'deploy', 'examples', 'wordcount');

describe('job lifecycle (real processes)', function () {
  let cluster: LocalCluster;
  /** The CLI's environment: the cluster's admin certificate. */
  const cliEnv = () => ({ ...process.env, ...cluster.clientEnv() });
  let client: FuxiClient;
  let failed = false;

  before(async () => {
    cluster = await startCluster('lifecycle');
    client = cluster.client();
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    client?.close();
    await stopCluster(cluster, failed);
  });

  async function finalState(jobId: string) {
    let last;
    for await (const j of client.watch(jobId)) last = j;
    return client.get(jobId).then(() => last!);
  }

  it('runs the word-count demo job to completion with the correct result', async () => {
    // Maps write into their own output directories; reducers fetch from the maps' agents; the
    // result is read from the reducers' agents: nothing goes through a shared folder.
    const spec = job({
      name: 'wordcount',
      env: { WC_INPUT: join(exampleDir, 'input', 'corpus.txt'), WC_REDUCERS: '4' },
      tasks: [
        { name: 'map', instances: 20, resources: { cpu: 0.2, memory: 128 }, command: ['node', 'map.mjs', '${instance}', '${instances}'], cwd: exampleDir },
        {
          name: 'reduce',
          instances: 4,
          resources: { cpu: 0.2, memory: 128 },
          command: ['node', 'reduce.mjs', '${instance}'],
          cwd: exampleDir,
          dependsOn: ['map'],
        },
      ],
    });
    const { jobId } = await client.submit(spec);
    const end = await finalState(jobId);
    expect(end.state, end.message).to.equal('JOB_STATE_SUCCEEDED');
    const counts = await wordcountResult(client, jobId, spec);
    expect(Object.fromEntries(counts)).to.deep.equal(Object.fromEntries(await expectedCounts(spec)));
    const info = await client.get(jobId);
    expect(info.tasks.map((t) => [t.name, t.succeeded, t.total])).to.deep.equal([
      ['map', 20, 20],
      ['reduce', 4, 4],
    ]);
  });

  it('completes a job whose instances fail twice and then succeed', async () => {
    const spec = job({
      name: 'flaky',
      tasks: [
        {
          name: 'flaky',
          instances: 4,
          resources: { cpu: 0.1, memory: 64 },
          command: 'if [ "$FUXI_ATTEMPT" -le 2 ]; then echo "attempt $FUXI_ATTEMPT fails" >&2; exit 1; fi; echo ok',
          maxAttempts: 3,
        },
      ],
    });
    const { jobId } = await client.submit(spec);
    const end = await finalState(jobId);
    expect(end.state, end.message).to.equal('JOB_STATE_SUCCEEDED');
    const t = (await client.get(jobId)).tasks[0]!;
    expect(t.succeeded).to.equal(4);
    expect(t.retries).to.equal(8);
  });

  it('fails a job whose instances always fail, with the reason', async () => {
    const spec = job({
      name: 'doomed',
      tasks: [{ name: 'boom', instances: 2, resources: { cpu: 0.1, memory: 64 }, command: 'echo "disk on fire" >&2; exit 7', maxAttempts: 2 }],
    });
    const { jobId } = await client.submit(spec);
    const end = await finalState(jobId);
    expect(end.state).to.equal('JOB_STATE_FAILED');
    expect(end.message).to.match(/boom/);
    expect(end.message).to.match(/2 attempts/);
    expect(end.message).to.match(/exit code 7/);
  });

  it('kill stops every worker of the job on every agent', async () => {
    const spec = job({
      name: 'sleepers',
      tasks: [{ name: 'sleep', instances: 6, resources: { cpu: 0.5, memory: 128 }, command: 'sleep 600 & sleep 600; wait' }],
    });
    const { jobId } = await client.submit(spec);
    const pids = await until('6 running sleepers', async () => {
      const nodes = await client.nodes();
      const found: Array<{ node: string; pid: number }> = [];
      for (const n of nodes) {
        const agent = connect(loadFuxiProto().AgentService, n.node!.address, client.transport);
        try {
          const st = await agent.ListWorkers({ appId: jobId });
          // A worker being spawned is listed as running with pid 0 until its process exists.
          for (const w of st.workers)
            if (w.task === 'sleep' && w.state === 'WORKER_STATE_RUNNING' && w.pid > 0) found.push({ node: n.node!.nodeId, pid: w.pid });
        } finally {
          agent.close();
        }
      }
      return found.length === 6 ? found : undefined;
    });
    expect(new Set(pids.map((p) => p.node)).size, 'workers spread over agents').to.be.greaterThan(1);
    // Every pid is a live process group with children (the two sleeps).
    for (const p of pids) expect(isAlive(p.pid)).to.equal(true);
    const killed = await client.kill(jobId, 'test says stop');
    expect(killed.state).to.equal('JOB_STATE_KILLED');
    await until('every worker pid gone', () => pids.every((p) => !isAlive(p.pid)), 30_000).catch((e: unknown) => {
      // What is left, to tell a zombie (and whose) from a live process.
      const left = pids.filter((p) => isAlive(p.pid)).map((p) => `${p.node} ${p.pid}: ${procSummary(p.pid)}`);
      throw new Error(`${(e as Error).message}; still there: ${left.join('; ')}`);
    });
    // ... including the grandchildren in each worker's process group.
    await until('every process group gone', () =>
      pids.every((p) => {
        try {
          process.kill(-p.pid, 0);
          return false;
        } catch {
          return true;
        }
      }),
    );
    const info = await client.get(jobId);
    expect(info.state).to.equal('JOB_STATE_KILLED');
    expect(info.message).to.equal('test says stop');
  });

  it('fuxi kill also ends children a worker detached (setsid, double fork): their files stop growing', async () => {
    const dir = join(cluster.opts.dir, 'detached');
    mkdirSync(dir, { recursive: true });
    // The workers run as the agents' unprivileged worker user: this shared folder is theirs to write.
    chmodSync(dir, 0o777);
    // Each instance starts two grandchildren that append to a file every 100 ms: one in its own
    // session (setsid), one reparented to init (double fork); then it sleeps.
    const loop = 'echo $$ > "$PIDF"; while :; do echo x >> "$OUT"; sleep 0.1; done';
    const script =
      'OUT="$D/$FUXI_INSTANCE-setsid.out" PIDF="$D/$FUXI_INSTANCE-setsid.pid" setsid sh -c "$LOOP" & ' +
      '(OUT="$D/$FUXI_INSTANCE-dfork.out" PIDF="$D/$FUXI_INSTANCE-dfork.pid" sh -c "$LOOP" &); sleep 600';
    const spec = job({
      name: 'detachers',
      env: { D: dir, LOOP: loop },
      tasks: [{ name: 'detach', instances: 2, resources: { cpu: 0.2, memory: 64 }, command: ['sh', '-c', script] }],
    });
    const files = [0, 1].flatMap((i) => [`${i}-setsid`, `${i}-dfork`]).map((n) => join(dir, n));
    const size = (f: string) => (existsSync(f) ? statSync(f).size : 0);
    // Alive and not a zombie (an orphan's zombie lasts until init reaps it).
    const running = (pid: number) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
      } catch {
        return false;
      }
    };
    const pids: number[] = [];
    try {
      const { jobId } = await client.submit(spec);
      await until('every grandchild writing', () => files.every((f) => size(`${f}.out`) > 0 && existsSync(`${f}.pid`)));
      for (const f of files) pids.push(Number(readFileSync(`${f}.pid`, 'utf8').trim()));
      const before = files.map((f) => size(`${f}.out`));
      await until('every file growing', () => files.every((f, i) => size(`${f}.out`) > before[i]!));
      const killed = await run(process.execPath, [BIN.cli, '--master', cluster.masterAddress, 'kill', jobId, '--reason', 'detached test'], { env: cliEnv() });
      expect(killed.stdout).to.match(/KILLED/);
      await until('every grandchild gone', () => pids.every((p) => !running(p)), 30_000);
      const after = files.map((f) => size(`${f}.out`));
      await sleep(1000);
      expect(
        files.map((f) => size(`${f}.out`)),
        'the files stopped growing',
      ).to.deep.equal(after);
      expect((await client.get(jobId)).state).to.equal('JOB_STATE_KILLED');
    } finally {
      for (const p of pids) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }
  });

  it('many small jobs: submitMany and a job array (at most 2 running), all waited for on one stream', async () => {
    const one = (name: string) => job({ name, tasks: [{ name: 't', instances: 1, resources: { cpu: 0.5, memory: 64 }, command: 'echo $FUXI_ARRAY_INDEX' }] });
    const specs = Array.from({ length: 20 }, (_, i) => ({ ...one('many'), jobId: `many-${i}` }));
    const res = await client.submitMany(specs);
    expect(res.every((r) => r.created && !r.error)).to.equal(true);
    const done = await client.waitAll({ jobIds: res.map((r) => r.jobId) }, { endsOnly: true });
    expect([...done.values()].filter((j) => j.state === 'JOB_STATE_SUCCEEDED')).to.have.length(20);
    // An array of 6 members, at most 2 running: held members start as others end.
    let mostRunning = 0;
    const { arrayId, results } = await client.submitArray({ ...one('arr'), jobId: 'arr' }, { indices: [0, 1, 2, 3, 4, 5], maxRunning: 2 });
    expect(results.map((r) => r.jobId)).to.deep.equal(['arr_0', 'arr_1', 'arr_2', 'arr_3', 'arr_4', 'arr_5']);
    const states = new Map<string, string>();
    const ends = await client.waitAll(
      { arrayId },
      {
        onChange: (j) => {
          states.set(j.jobId, j.state);
          mostRunning = Math.max(mostRunning, [...states.values()].filter((s) => s === 'JOB_STATE_RUNNING').length);
        },
      },
    );
    expect([...ends.keys()].sort()).to.deep.equal(results.map((r) => r.jobId));
    expect([...ends.values()].every((j) => j.state === 'JOB_STATE_SUCCEEDED')).to.equal(true);
    expect(mostRunning).to.be.at.most(2);
    expect((await client.list({ arrayId })).map((j) => j.jobId)).to.deep.equal(results.map((r) => r.jobId));
  });

  it('never over-commits a node (checked from agent reports while jobs compete)', async () => {
    const nodes = await client.nodes();
    const capacity = new Map(nodes.map((n) => [n.node!.address, n.node!.capacity!]));
    const specs = [0, 1, 2].map((i) =>
      job({
        name: `pressure-${i}`,
        tasks: [{ name: 'work', instances: 12, resources: { cpu: 0.7, memory: 300 }, command: 'sleep 0.4' }],
      }),
    );
    const ids = await Promise.all(specs.map((s) => client.submit(s).then((r) => r.jobId)));
    let samples = 0;
    let maxCpu = 0;
    const done = () =>
      Promise.all(ids.map((id) => client.get(id))).then((js) => js.every((j) => ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED'].includes(j.state)));
    while (!(await done())) {
      for (const [address, cap] of capacity) {
        const agent = connect(loadFuxiProto().AgentService, address, client.transport);
        try {
          const st = await agent.GetAgentState({});
          let cpu = 0;
          let mem = 0;
          for (const w of st.workers) {
            if (w.state !== 'WORKER_STATE_RUNNING') continue;
            cpu += w.resource?.cpuMilli ?? 0;
            mem += w.resource?.memoryMb ?? 0;
          }
          samples++;
          maxCpu = Math.max(maxCpu, cpu);
          expect(cpu, `cpu on ${address}`).to.be.at.most(cap.cpuMilli);
          expect(mem, `memory on ${address}`).to.be.at.most(cap.memoryMb);
        } finally {
          agent.close();
        }
      }
      await sleep(50);
    }
    for (const id of ids) expect((await client.get(id)).state).to.equal('JOB_STATE_SUCCEEDED');
    expect(samples).to.be.greaterThan(10);
    expect(maxCpu, 'the nodes were actually busy').to.be.greaterThan(1000);
  });

  describe('bad input', () => {
    const cli = (args: string[]) =>
      run(process.execPath, [BIN.cli, '--master', cluster.masterAddress, ...args], { env: cliEnv() }).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
      );
    const cases: Array<[string, string, RegExp]> = [
      ['malformed YAML', 'name: x\ntasks: [\n', /YAML|JSON/i],
      ['unknown field', 'name: x\ntasks:\n  - name: a\n    instnaces: 2\n    resources: {cpu: 1, memory: 10}\n    command: "true"\n', /tasks\[0\].*instnaces/],
      ['zero cpu', 'name: x\ntasks:\n  - name: a\n    instances: 2\n    resources: {cpu: 0, memory: 10}\n    command: "true"\n', /tasks\[0\]\.resources\.cpu/],
      [
        'negative memory',
        'name: x\ntasks:\n  - name: a\n    instances: 2\n    resources: {cpu: 1, memory: -5}\n    command: "true"\n',
        /tasks\[0\]\.resources\.memory/,
      ],
      [
        'cyclic dependsOn',
        'name: x\ntasks:\n  - {name: a, instances: 1, resources: {cpu: 1, memory: 10}, command: "true", dependsOn: [b]}\n  - {name: b, instances: 1, resources: {cpu: 1, memory: 10}, command: "true", dependsOn: [a]}\n',
        /cycle/,
      ],
      ['missing command', 'name: x\ntasks:\n  - {name: a, instances: 1, resources: {cpu: 1, memory: 10}}\n', /tasks\[0\]\.command/],
      [
        'duplicate task names',
        'name: x\ntasks:\n  - {name: a, instances: 1, resources: {cpu: 1, memory: 10}, command: "true"}\n  - {name: a, instances: 1, resources: {cpu: 1, memory: 10}, command: "true"}\n',
        /duplicate/,
      ],
      [
        'instance larger than every node',
        'name: x\ntasks:\n  - {name: a, instances: 1, resources: {cpu: 64, memory: 10}, command: "true"}\n',
        /tasks\[0\]\.resources.*larger than every node/,
      ],
    ];
    for (const [what, text, pattern] of cases) {
      it(`fuxi submit rejects ${what}, naming the field, and creates nothing`, async () => {
        const before = (await client.list()).length;
        const file = join(cluster.opts.dir, 'bad', `${what.replace(/\W+/g, '-')}.yaml`);
        mkdirSync(join(cluster.opts.dir, 'bad'), { recursive: true });
        writeFileSync(file, text);
        const r = await cli(['submit', file]);
        expect(r.code, r.stderr).to.not.equal(0);
        expect(r.stderr).to.match(pattern);
        expect(r.stderr).to.not.match(/\n\s+at /, 'no stack trace');
        expect((await client.list()).length).to.equal(before);
      });
    }

    it('the master runs the same checks: INVALID_ARGUMENT with the same message, nothing created', async () => {
      const master = connect(loadFuxiProto().MasterService, cluster.masterAddress, cluster.transport());
      const before = (await client.list()).length;
      try {
        const tasks = [{ name: 'a', instances: 1, resource: { cpuMilli: 0, memoryMb: 10 }, command: { argv: ['true'] }, maxAttempts: 1 }];
        const err = await master.SubmitJob({ spec: { jobId: 'raw-1', name: 'raw', tasks } }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).to.be.instanceOf(RpcError);
        expect((err as RpcError).code).to.equal('INVALID_ARGUMENT');
        expect((err as RpcError).message).to.match(/^tasks\[0\]\.resources\.cpu: /);
        const cyc = await master
          .SubmitJob({
            spec: {
              jobId: 'raw-2',
              name: 'raw',
              tasks: [{ name: 'a', instances: 1, resource: { cpuMilli: 100, memoryMb: 10 }, command: { argv: ['true'] }, maxAttempts: 1, dependsOn: ['a'] }],
            },
          })
          .then(
            () => undefined,
            (e: unknown) => e as RpcError,
          );
        expect(cyc?.code).to.equal('INVALID_ARGUMENT');
        expect((await client.list()).length).to.equal(before);
      } finally {
        master.close();
      }
    });

    it('unknown job id is NOT_FOUND (SDK and CLI exit code 3)', async () => {
      const err = await client.get('no-such-job').then(
        () => undefined,
        (e: unknown) => e as RpcError,
      );
      expect(err?.code).to.equal('NOT_FOUND');
      const r = await cli(['status', 'no-such-job']);
      expect(r.code).to.equal(3);
      expect(r.stderr).to.match(/no-such-job/);
    });
  });

  describe('CLI', () => {
    it('submit --wait, status, list, nodes and logs work end to end', async () => {
      const file = join(cluster.opts.dir, 'hello.yaml');
      writeFileSync(
        file,
        'id: hello-cli\nname: hello\ntasks:\n  - name: greet\n    instances: 3\n    resources: {cpu: 0.1, memory: 32Mi}\n    command: ["sh", "-c", "echo hello from ${instance}"]\n',
      );
      const cli = (args: string[]) => run(process.execPath, [BIN.cli, '--master', cluster.masterAddress, ...args], { env: cliEnv() });
      const sub = await cli(['submit', file, '--wait']);
      expect(sub.stdout).to.match(/hello-cli/);
      const st = JSON.parse((await cli(['status', 'hello-cli', '-o', 'json'])).stdout) as { state: string };
      expect(st.state).to.equal('JOB_STATE_SUCCEEDED');
      expect((await cli(['list'])).stdout).to.match(/hello-cli/);
      expect((await cli(['nodes'])).stdout).to.match(/node-1/);
      const logs = await cli(['logs', 'hello-cli', 'greet', '2']);
      expect(logs.stdout).to.equal('hello from 2\n');
      // Resubmitting the same id is idempotent.
      const again = await cli(['submit', file]);
      expect(again.stdout).to.match(/hello-cli/);
      expect((await client.list()).filter((j) => j.jobId === 'hello-cli')).to.have.length(1);
    });
  });
});
