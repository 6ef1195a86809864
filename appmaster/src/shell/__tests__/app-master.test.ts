import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nullLogger } from '@fuxi/common';
import { AppMaster, configFromEnv } from '../app-master.js';
import { FakeAgent, FakeMaster, wireJob } from './fakes.js';

const MAIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'main.js');
/** The installed `fuxi-appmaster`: the bundle and its launcher (scripts/bundle.mjs, `make build`). */
const BUNDLED = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fuxi-appmaster.cjs');

describe('AppMaster shell (fake master and agents on loopback)', () => {
  let master: FakeMaster | undefined;
  let agents: FakeAgent[] = [];
  const children: ChildProcess[] = [];

  async function cluster(spec = wireJob(), behaviour?: FakeAgent['behaviour']): Promise<FakeMaster> {
    agents = await Promise.all(['n1', 'n2'].map((id) => new FakeAgent(id, behaviour).start()));
    master = await new FakeMaster(spec, agents).start();
    for (const a of agents) a.master = master;
    return master;
  }

  const am = (m: FakeMaster) => new AppMaster({ masters: [m.address], appId: 'app-1', amAttempt: 1, nodeId: 'n1', log: nullLogger, deadlineMs: 3000 });

  afterEach(async () => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.pid) process.kill(c.pid, 'SIGKILL');
    await master?.stop();
    await Promise.all(agents.map((a) => a.stop()));
    master = undefined;
    agents = [];
  });

  it('runs a 2-stage job to success and calls FinishApp with the progress', async () => {
    const m = await cluster();
    const a = am(m);
    const result = await a.run();
    expect(result).to.deep.equal({ succeeded: true, message: '2 tasks succeeded' });
    expect(m.finished).to.deep.include({ appId: 'app-1', amAttempt: 1, succeeded: true });
    expect(m.finished?.progress.map((p) => [p.name, p.total, p.succeeded, p.failed])).to.deep.equal([
      ['map', 4, 4, 0],
      ['reduce', 2, 2, 0],
    ]);
    // Every slot went back before FinishApp; the AM never ran more workers than it held slots.
    expect([...m.asgn.values()].every((n) => n === 0)).to.equal(true);
    expect(agents.flatMap((x) => x.violations)).to.deep.equal([]);
    // Requests: units once per SU, seqs strictly increasing.
    const seqs = m.requests.map((r) => Number(r.seq));
    expect(seqs).to.deep.equal([...seqs].sort((x, y) => x - y));
    expect(new Set(seqs).size).to.equal(seqs.length);
    expect(m.requests.flatMap((r) => r.units.map((u) => u.suId))).to.deep.equal(['map', 'reduce']);
    // Plans carry the AM's address and attempt, and substituted commands.
    const starts = agents.flatMap((x) => x.started);
    expect(starts.every((s) => s.amAddress === a.address && s.amAttempt === 1 && s.appId === 'app-1' && s.epoch === '0')).to.equal(true);
    const plans = agents
      .flatMap((x) => x.plans)
      .map((p) => p.workerId)
      .sort();
    expect(plans).to.deep.equal(['map.0.1', 'map.1.1', 'map.2.1', 'map.3.1', 'reduce.0.1', 'reduce.1.1']);
    expect(agents.flatMap((x) => x.plans).find((p) => p.workerId === 'map.2.1')?.command?.argv).to.deep.equal(['true', 'map', '2']);
  });

  it('retries failed and rejected attempts and fails the job when attempts run out', async () => {
    const m = await cluster(wireJob({}, 2), (p) => {
      if (p.task === 'map' && p.instance === 1) return { state: 'failed', exitCode: 1, message: 'boom' };
      if (p.task === 'map' && p.instance === 2 && p.attempt === 1) return { state: 'rejected', message: 'no grant' };
      return { state: 'succeeded' };
    });
    const result = await am(m).run();
    expect(result.succeeded).to.equal(false);
    expect(result.message).to.equal('task "map" instance 1 failed after 2 attempts: exit code 1 (boom)');
    expect(m.finished).to.deep.include({ succeeded: false, message: result.message });
    const ids = agents.flatMap((x) => x.plans).map((p) => p.workerId);
    expect(ids).to.include.members(['map.1.1', 'map.1.2', 'map.2.1', 'map.2.2']);
    expect(ids.some((id) => id.startsWith('reduce'))).to.equal(false);
    expect(m.returns.length).to.be.greaterThan(0);
  });

  it('heals a lost assignment message through a full table in an UpdateRequests answer', async () => {
    const m = await cluster();
    m.dropPushes = 1; // the first placement of map slots never reaches the AM
    const result = await am(m).run();
    expect(result.succeeded).to.equal(true);
    expect(m.fullTablesSent).to.be.greaterThan(0);
    expect(agents.flatMap((x) => x.violations)).to.deep.equal([]);
  });

  it('takes back a request the master refuses on the count of slots and asks again later', async () => {
    const m = await cluster();
    m.refuseRaises = 2;
    const result = await am(m).run();
    expect(result.succeeded).to.equal(true);
    expect(m.refused).to.equal(2);
    // Units are declared again with the request that is taken; every SU's slots went back.
    expect(m.requests.filter((r) => r.units.some((u) => u.suId === 'map')).length).to.be.greaterThan(1);
    expect([...m.asgn.values()].every((n) => n === 0)).to.equal(true);
    expect(agents.flatMap((x) => x.violations)).to.deep.equal([]);
  });

  it('gives up when the master goes on refusing its requests past refusalGiveUpMs', async () => {
    const m = await cluster();
    m.refuseRaises = Infinity;
    const a = new AppMaster({ masters: [m.address], appId: 'app-1', amAttempt: 1, nodeId: 'n1', log: nullLogger, deadlineMs: 3000, refusalGiveUpMs: 300 });
    let err: unknown;
    try {
      await a.run();
    } catch (e) {
      err = e;
    }
    expect(String(err)).to.match(/the master has refused our requests for \d+ ms/);
    expect(m.refused).to.be.greaterThan(1);
    expect(m.finished).to.equal(undefined);
  });

  it('heartbeats UpdateRequests without deltas, reporting progress and the applied assignment seq', async () => {
    const m = await cluster(wireJob({ tasks: [wireJob().tasks![0]!] }));
    for (const x of agents) x.runMs = 400;
    expect((await am(m).run()).succeeded).to.equal(true);
    const beats = m.requests.filter((r) => r.deltas.length === 0 && r.units.length === 0);
    expect(beats.length).to.be.greaterThan(2);
    const mid = beats.find((b) => b.progress[0]?.running === 4);
    expect(mid?.progress).to.deep.equal([
      { name: 'map', total: 4, pending: 0, running: 4, succeeded: 0, failed: 0, retries: 0, reexecutions: 0, progress: 0, backups: 0 },
    ]);
    expect(Number(mid?.assignmentSeq)).to.be.greaterThan(0);
  });

  it('sends no heartbeat on the tick right after a request was answered: the next one goes an interval later', async () => {
    // Two tasks, the second after the first: requests come while heartbeats tick (every 50 ms).
    const m = await cluster(wireJob());
    // The master serves the assignment stream (a refused one adds a heartbeat at a random moment).
    m.streams = true;
    for (const x of agents) x.runMs = 300;
    expect((await am(m).run()).succeeded).to.equal(true);
    const updates = m.calls.flatMap((c, k) => (c === 'UpdateRequests' ? [m.callTimes[k]!] : []));
    const isRequest = m.requests.map((r) => r.deltas.length > 0 || r.units.length > 0);
    const gaps: number[] = [];
    for (let n = 1; n < updates.length; n++) if (isRequest[n - 1] && !isRequest[n]) gaps.push(updates[n]! - updates[n - 1]!);
    expect(gaps.length).to.be.greaterThan(0);
    // The tick after a request is skipped: the heartbeat that follows comes at least most of an interval later.
    expect(Math.min(...gaps)).to.be.at.least(40);
  });

  for (const stream of [true, false]) {
    it(`${stream ? 'with its assignment stream (the default) holds WatchAssignments open' : "with assignmentStream false (an AM host's inline AM) opens no WatchAssignments stream and runs on pushes by call"}`, async () => {
      const m = await cluster(wireJob());
      // The master serves streams either way.
      m.streams = true;
      const a = new AppMaster({
        masters: [m.address],
        appId: 'app-1',
        amAttempt: 1,
        nodeId: 'n1',
        log: nullLogger,
        deadlineMs: 3000,
        ...(stream ? {} : { assignmentStream: false }),
      });
      expect((await a.run()).succeeded).to.equal(true);
      expect(m.calls.includes('WatchAssignments')).to.equal(stream);
    });
  }

  for (const [what, bin] of [
    ['module tree', MAIN],
    ['bundle, as make build installs it', BUNDLED],
  ] as const) {
    it(`runs as the fuxi-appmaster binary (${what}) and exits 0 after FinishApp`, async () => {
      const m = await cluster();
      const child = spawn(process.execPath, [bin], {
        env: {
          ...process.env,
          FUXI_MASTER: `127.0.0.1:1,${m.address}`,
          FUXI_APP_ID: 'app-1',
          FUXI_AM_ATTEMPT: '1',
          FUXI_NODE_ID: 'n1',
          FUXI_LOG_LEVEL: 'warn',
          FUXI_INSECURE: '1', // the fake master and agents serve plaintext
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let out = '';
      child.stdout?.on('data', (d) => (out += String(d)));
      child.stderr?.on('data', (d) => (out += String(d)));
      const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
      expect(code, out).to.equal(0);
      expect(m.finished?.succeeded).to.equal(true);
    });
  }

  it('exits 1 without a master address', async () => {
    const child = spawn(process.execPath, [MAIN], { env: { ...process.env, FUXI_MASTER: '', FUXI_APP_ID: 'app-1', FUXI_LOG_LEVEL: 'fatal' }, stdio: 'ignore' });
    children.push(child);
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    expect(code).to.equal(1);
    expect(() => configFromEnv({ FUXI_MASTER: 'a:1', FUXI_APP_ID: 'x', FUXI_AM_ATTEMPT: 'zero' }, nullLogger)).to.throw('FUXI_AM_ATTEMPT');
    expect(configFromEnv({ FUXI_MASTER: 'a:1, b:2', FUXI_APP_ID: 'x' }, nullLogger)).to.deep.include({
      masters: ['a:1', 'b:2'],
      amAttempt: 1,
      bind: '127.0.0.1:0',
    });
  });
});
