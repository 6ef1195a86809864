/**
 * Identities and roles with real processes (a master with a tokens file, two agents, real AMs and
 * workers, mutual TLS: every client presents the cluster's admin certificate, and a bearer token,
 * when it has one, names the caller instead): a user cannot
 * see or kill another user's job and can kill its own, an admin can kill any; the AM's attempt token
 * is refused, by the master and by an agent, once the AM was killed and a new attempt runs with a
 * new token; StartWorkers with no token or a wrong one starts nothing; the token is in no log file,
 * not in `fuxi status --json`, GetJob or a worker's environment.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { FuxiClient } from '@fuxi/client';
import { BIN, type LocalCluster } from '@fuxi/deploy';
import { loadFuxiProto, type WorkerStatus__Output } from '@fuxi/proto';
import { connect, RpcError } from '@fuxi/rpc';
import { job, sleep, startCluster, stopCluster, until } from '../harness.js';

const run = promisify(execFile);
const ADMIN = 'admin-token-for-the-auth-test-0001';
const ALICE = 'alice-token-for-the-auth-test-0002';
const BOB = 'bob-token-for-the-auth-test-00003';
const HOLD = 'while [ ! -e "$RELEASE" ]; do sleep 0.2; done';

interface Worker {
  nodeId: string;
  address: string;
  appId: string;
  workerId: string;
  suId: string;
  pid: number;
  state: string;
  amAttempt: number;
}

/**
 * Every log file under `dir` (daemons' logs, the AM host's, workers' stdout and stderr) and every
 * file beside a worker (`cmd.json`: what a sibling worker of the app could read). The stores'
 * files (the master's and agents' LevelDB: hard state, where the token belongs) are not logs.
 */
function logFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory() && (e.name === 'master-data' || e.name === 'checkpoint')) continue;
    if (e.isDirectory()) out.push(...logFiles(p));
    else if (e.isFile() && /\.log$|^stdout$|^stderr$|^cmd\.json$/.test(e.name)) out.push(p);
  }
  return out;
}

function environOf(pid: number): Record<string, string> {
  const raw = readFileSync(`/proc/${pid}/environ`, 'utf8');
  return Object.fromEntries(
    raw
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
}

async function refusal(p: Promise<unknown>): Promise<RpcError> {
  const r = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(r instanceof RpcError)) throw new Error(`expected a refusal, got ${r === undefined ? 'an answer' : String(r)}`);
  return r;
}

describe('identities, roles and AM tokens (real processes)', function () {
  this.timeout(180_000);
  let cluster: LocalCluster;
  let admin: FuxiClient;
  let alice: FuxiClient;
  let bob: FuxiClient;
  let failed = false;
  let tokensDir = '';
  let tokensFile = '';
  const proto = loadFuxiProto();

  before(async () => {
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    tokensDir = mkdtempSync(join(tmpdir(), 'fuxi-it-tokens-'));
    tokensFile = join(tokensDir, 'tokens.csv');
    writeFileSync(tokensFile, `${ADMIN},root,admin\n${ALICE},alice,user\n${BOB},bob,user,gold\n`);
    const masterConfig = join(tokensDir, 'master.json');
    writeFileSync(masterConfig, JSON.stringify({ tokensFile, quotaGroups: [{ name: 'default' }, { name: 'gold' }] }));
    cluster = await startCluster('auth', { agents: 2, logLevel: 'debug', masterArgs: ['--config', masterConfig] });
    const masters = [cluster.masterAddress];
    admin = new FuxiClient({ transport: cluster.transport(), masters, token: ADMIN });
    alice = new FuxiClient({ transport: cluster.transport(), masters, token: ALICE });
    bob = new FuxiClient({ transport: cluster.transport(), masters, token: BOB });
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    for (const c of [admin, alice, bob]) c?.close();
    await stopCluster(cluster, failed);
    if (tokensDir) rmSync(tokensDir, { recursive: true, force: true });
  });

  async function workers(): Promise<Worker[]> {
    const out: Worker[] = [];
    for (const a of cluster.agents) {
      const c = connect(proto.AgentService, a.address, cluster.transport());
      try {
        const st = await c.GetAgentState({}, { deadlineMs: 3000 });
        for (const w of st.workers as WorkerStatus__Output[])
          out.push({
            nodeId: a.nodeId,
            address: a.address,
            appId: w.appId,
            workerId: w.workerId,
            suId: w.suId,
            pid: w.pid,
            state: w.state,
            amAttempt: w.amAttempt,
          });
      } finally {
        c.close();
      }
    }
    return out;
  }

  function held(id: string, release: string, extra: Record<string, unknown> = {}) {
    return job({
      id,
      name: id,
      ...extra,
      tasks: [{ name: 'hold', instances: 1, resources: { cpu: 0.1, memory: '32Mi' }, command: ['sh', '-c', HOLD], env: { RELEASE: release } }],
    });
  }

  it("a user cannot see or kill another user's job (PERMISSION_DENIED), can kill its own; an admin can kill any", async () => {
    const release = join(cluster.opts.dir, 'release-users');
    await alice.submit(held('alice-1', release));
    await alice.submit(held('alice-2', release));
    await bob.submit(held('bob-1', release, { quotaGroup: 'gold' }));
    expect((await alice.get('alice-1')).owner).to.equal('alice');
    for (const call of [bob.get('alice-1'), bob.kill('alice-1', 'not mine')]) {
      const e = await refusal(call);
      expect(e.code).to.equal('PERMISSION_DENIED');
      expect(e.message).to.match(/job owned by alice .* bob may act only on its own jobs/);
    }
    // A user lists only what it may see; an admin sees every job.
    expect((await bob.list()).map((j) => j.jobId)).to.deep.equal(['bob-1']);
    expect((await admin.list()).map((j) => j.jobId).sort()).to.deep.equal(['alice-1', 'alice-2', 'bob-1']);
    // Cluster operations need an admin.
    const cordon = await refusal(alice.cordon('node-1', { reason: 'mine now' }));
    expect(cordon.code).to.equal('PERMISSION_DENIED');
    // An unknown token is UNAUTHENTICATED, and says nothing of the token.
    const stranger = new FuxiClient({ transport: cluster.transport(), masters: [cluster.masterAddress], token: 'nobody-knows-this-token-0000' });
    try {
      const e = await refusal(stranger.get('alice-1'));
      expect(e.code).to.equal('UNAUTHENTICATED');
      expect(e.message).not.to.contain('nobody-knows');
    } finally {
      stranger.close();
    }
    expect((await alice.kill('alice-1', 'mine')).state).to.equal('JOB_STATE_KILLED');
    expect((await admin.kill('bob-1', 'admin')).state).to.equal('JOB_STATE_KILLED');
    // `fuxi list` shows the owner.
    const cli = await run(process.execPath, [BIN.cli, '--master', cluster.masterAddress, 'list'], {
      env: { ...process.env, ...cluster.clientEnv(), FUXI_TOKEN_FILE: '' },
    });
    expect(cli.stdout).to.match(/^JOB\s+NAME\s+STATE\s+OWNER/m);
    expect(cli.stdout).to.match(/alice-2\s+alice-2\s+\S+\s+alice\b/);
    writeFileSync(release, '');
    await admin.kill('alice-2', 'done');
  });

  it('the master reads the tokens file again when it changes, and on SIGHUP', async () => {
    const CAROL = 'carol-token-for-the-auth-test-004';
    const carol = new FuxiClient({ transport: cluster.transport(), masters: [cluster.masterAddress], token: CAROL, retryForMs: 500 });
    const base = `${ADMIN},root,admin\n${ALICE},alice,user\n${BOB},bob,user,gold\n`;
    try {
      expect((await refusal(carol.list())).code).to.equal('UNAUTHENTICATED');
      writeFileSync(tokensFile, `${base}${CAROL},carol,user\n`);
      await until('carol known', async () => Array.isArray(await carol.list().catch(() => undefined)), 10_000);
      // Carol's line is gone, and SIGHUP has the master read the file at once.
      writeFileSync(tokensFile, base);
      process.kill(cluster.master.pid, 'SIGHUP');
      await until(
        'carol unknown again',
        async () =>
          (await carol.list().then(
            () => undefined,
            (e: unknown) => e,
          )) instanceof RpcError,
        10_000,
      );
      expect((await refusal(carol.list())).code).to.equal('UNAUTHENTICATED');
    } finally {
      carol.close();
    }
  });

  it("an old AM attempt's token is refused by the master and by the agent; StartWorkers without the token starts nothing; the token is in no log, status or worker", async () => {
    const release = join(cluster.opts.dir, 'release-am');
    await alice.submit(held('tok-1', release, { am: 'dedicated' }));
    // The AM (its own process) and its worker run.
    const first = await until('the AM and its worker running', async () => {
      const ws = (await workers()).filter((w) => w.appId === 'tok-1' && w.state === 'WORKER_STATE_RUNNING' && w.pid > 0);
      const am = ws.find((w) => w.suId === '__am__');
      const task = ws.find((w) => w.suId !== '__am__');
      return am && task ? { am, task } : undefined;
    });
    const oldToken = environOf(first.am.pid).FUXI_AM_TOKEN ?? '';
    expect(oldToken).to.have.length(43); // 32 random bytes, base64url
    // The worker's environment holds no AM token.
    const workerEnv = environOf(first.task.pid);
    expect(workerEnv).not.to.have.property('FUXI_AM_TOKEN');
    expect(Object.values(workerEnv).join('\n')).not.to.contain(oldToken);

    // The token works for its own attempt...
    const master = connect(proto.MasterService, cluster.masterAddress, cluster.transport());
    try {
      await master.GetAppSnapshot({ appId: 'tok-1' }, { token: oldToken, deadlineMs: 5000 });

      // ... until the AM is killed and the master starts attempt 2 with a new token.
      process.kill(first.am.pid, 'SIGKILL');
      const second = await until('AM attempt 2 running', async () =>
        (await workers()).find((w) => w.appId === 'tok-1' && w.suId === '__am__' && w.amAttempt === 2 && w.state === 'WORKER_STATE_RUNNING' && w.pid > 0),
      );
      const newToken = environOf(second.pid).FUXI_AM_TOKEN ?? '';
      expect(newToken).to.have.length(43);
      expect(newToken).not.to.equal(oldToken);
      await until('attempt 2 registered', async () => (await admin.get('tok-1')).amAddress !== '' && (await admin.get('tok-1')).amAttempt === 2);

      // The master refuses the old attempt's token, an AM call with no token (the caller is only
      // the admin its certificate names: PERMISSION_DENIED both) and answers the new one.
      for (const call of [
        master.RegisterApp({ appId: 'tok-1', amAttempt: 1, address: '127.0.0.1:1' }, { token: oldToken, deadlineMs: 5000 }),
        master.FinishApp({ appId: 'tok-1', amAttempt: 1, succeeded: true, message: 'forged', progress: [] }, { token: oldToken, deadlineMs: 5000 }),
        master.UpdateRequests({ appId: 'tok-1', amAttempt: 2, seq: '999', deltas: [], units: [] } as never, { token: oldToken, deadlineMs: 5000 }),
      ]) {
        const e = await refusal(call);
        expect(e.code).to.equal('PERMISSION_DENIED');
        expect(e.message).to.match(/token is of attempt 1 of tok-1; the current attempt is 2/);
      }
      expect(
        (await refusal(master.FinishApp({ appId: 'tok-1', amAttempt: 2, succeeded: true, message: 'x', progress: [] }, { deadlineMs: 5000 }))).code,
      ).to.equal('PERMISSION_DENIED');
      // The same calls in a batch (AmCalls, as an AM host sends its AMs' calls): each is refused
      // on its own token, or on the batch caller's identity when it carries none.
      const M = proto.MasterService.service;
      const batch = await master.AmCalls(
        {
          calls: [
            {
              method: 'FinishApp',
              token: oldToken,
              request: M.FinishApp.requestSerialize({ appId: 'tok-1', amAttempt: 1, succeeded: true, message: 'forged' }),
            },
            { method: 'UpdateRequests', token: oldToken, request: M.UpdateRequests.requestSerialize({ appId: 'tok-1', amAttempt: 2, seq: '999' }) },
            { method: 'FinishApp', token: '', request: M.FinishApp.requestSerialize({ appId: 'tok-1', amAttempt: 2, succeeded: true, message: 'x' }) },
            {
              method: 'FinishApp',
              token: 'y'.repeat(43),
              request: M.FinishApp.requestSerialize({ appId: 'tok-1', amAttempt: 2, succeeded: true, message: 'x' }),
            },
          ],
        },
        { deadlineMs: 5000 },
      );
      expect(batch.results.map((r) => r.code)).to.deep.equal(['PERMISSION_DENIED', 'PERMISSION_DENIED', 'PERMISSION_DENIED', 'UNAUTHENTICATED']);
      expect(batch.results[0]!.message).to.match(/token is of attempt 1 of tok-1; the current attempt is 2/);
      expect((await admin.get('tok-1')).state).to.equal('JOB_STATE_RUNNING');
      await master.GetAppSnapshot({ appId: 'tok-1' }, { token: newToken, deadlineMs: 5000 });

      // The agents refuse plans with the old token, a wrong token or none: nothing starts.
      const marker = join(cluster.opts.dir, 'forged-plan-ran');
      const plan = (workerId: string) => ({
        workerId,
        suId: first.task.suId,
        task: 'hold',
        instance: 7,
        attempt: 1,
        command: { argv: ['sh', '-c', `touch ${marker}`], env: {}, cwd: '' },
        resource: { cpuMilli: 100, memoryMb: 32 },
      });
      const agentAddress = first.task.address;
      const agent = connect(proto.AgentService, agentAddress, cluster.transport());
      try {
        const tries: Array<[string, number, string | undefined]> = [
          ['old token', 1, oldToken],
          ['old token, new attempt', 2, oldToken],
          ['no token', 2, undefined],
          ['wrong token', 2, 'x'.repeat(43)],
        ];
        for (const [what, amAttempt, token] of tries) {
          const e = await refusal(
            agent.StartWorkers(
              { appId: 'tok-1', amAttempt, amAddress: '127.0.0.1:1', epoch: '0', plans: [plan(`forged-${what.replace(/\W+/g, '-')}`)] },
              { deadlineMs: 5000, ...(token ? { token } : {}) },
            ),
          );
          expect(e.code, what).to.equal('PERMISSION_DENIED');
        }
        const stop = await refusal(
          agent.StopWorkers({ appId: 'tok-1', workerIds: [], amAttempt: 1, epoch: '0', reason: 'forged' }, { token: oldToken, deadlineMs: 5000 }),
        );
        expect(stop.code).to.equal('PERMISSION_DENIED');
      } finally {
        agent.close();
      }
      await sleep(1000);
      expect(existsSync(marker)).to.equal(false);
      const ws = await workers();
      expect(ws.filter((w) => w.workerId.startsWith('forged'))).to.deep.equal([]);
      // The job's worker was never touched.
      expect(ws.find((w) => w.appId === 'tok-1' && w.workerId === first.task.workerId)).to.include({ pid: first.task.pid, state: 'WORKER_STATE_RUNNING' });

      // Neither token is in any log file, in GetJob or in `fuxi status --json`.
      const job = await admin.get('tok-1');
      const status = await run(process.execPath, [BIN.cli, '--master', cluster.masterAddress, 'status', 'tok-1', '-o', 'json'], {
        env: { ...process.env, ...cluster.clientEnv() },
      });
      for (const token of [oldToken, newToken]) {
        expect(JSON.stringify(job)).not.to.contain(token);
        expect(status.stdout).not.to.contain(token);
      }
      const logs = logFiles(cluster.opts.dir);
      for (const f of ['master.log', 'node-1.log', 'node-2.log']) expect(logs).to.include(join(cluster.opts.dir, f));
      expect(logs.filter((f) => f.endsWith('cmd.json')).length).to.be.greaterThan(2);
      let bytes = 0;
      for (const f of logs) {
        const text = readFileSync(f, 'utf8');
        bytes += statSync(f).size;
        for (const token of [oldToken, newToken]) expect(text.includes(token), `${f} holds an AM token`).to.equal(false);
      }
      expect(bytes).to.be.greaterThan(0);
    } finally {
      master.close();
    }
    writeFileSync(release, '');
    await until('tok-1 finished', async () => (await alice.get('tok-1')).state === 'JOB_STATE_SUCCEEDED', 60_000);
  });
});
