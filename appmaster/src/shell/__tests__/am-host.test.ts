/**
 * The AM host: hosted AMs run to FinishApp on the main loop and in a thread (fake masters and
 * agents on loopback), and one AM's exception, stall or stop never reaches its neighbours: in the
 * class (the wall's attribution, stop graces) and in the `fuxi-amhost` binary over its socket.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeLine, LineDecoder, nullLogger, type AmHostExitEvent, type HostedAmSpec } from '@fuxi/common';
import type { TaskProgress } from '../../core/types.js';
import { loadFuxiProto } from '@fuxi/proto';
import { connect, implement, RpcError } from '@fuxi/rpc';
import { AmHost, currentAmKey, SharedAmServers, type HostedAppMaster } from '../am-host.js';
import { FakeAgent, FakeMaster, wireJob } from './fakes.js';

const HOST_MAIN = fileURLToPath(new URL('../am-host-main.js', import.meta.url));
/** The bundled `fuxi-amhost` (`make build`; scripts/bundle.mjs): the program the agent runs by default. */
const HOST_BUNDLED = fileURLToPath(new URL('../../fuxi-amhost.cjs', import.meta.url));

async function waitFor(cond: () => boolean, ms = 15_000, what = 'condition'): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A fake AM the test drives: it runs until told, and can raise an error from its own async context. */
class ScriptedAm implements HostedAppMaster {
  private settle!: { resolve: () => void; reject: (e: unknown) => void };
  private readonly done = new Promise<void>((resolve, reject) => (this.settle = { resolve, reject }));
  stops: string[] = [];
  paused = 0;
  /** Called in the AM's context once it runs (set by the test). */
  onRun: (() => void) | undefined;
  ignoreStop = false;

  run(): Promise<unknown> {
    this.onRun?.();
    return this.done;
  }
  finish(): void {
    this.settle.resolve();
  }
  stop(reason: string): Promise<void> {
    this.stops.push(reason);
    if (!this.ignoreStop) this.settle.reject(new Error(reason));
    return Promise.resolve();
  }
  pause(): () => void {
    this.paused++;
    return () => this.paused--;
  }
}

describe('AM host', function () {
  this.timeout(60_000);
  let dir = '';
  const masters: FakeMaster[] = [];
  const agents: FakeAgent[] = [];
  const children: ChildProcess[] = [];

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-amhost-'));
  });
  afterEach(async () => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null && c.pid) process.kill(c.pid, 'SIGKILL');
    await Promise.all(masters.splice(0).map((m) => m.stop()));
    await Promise.all(agents.splice(0).map((a) => a.stop()));
    // A host closed at a test's end stops its AMs after it returns: their last log lines may still
    // land in the folder while it is removed (ENOTEMPTY), so the removal is tried again, letting
    // this process (the host's) write them in between.
    await fs.promises.rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  });

  async function fakeCluster(appId: string): Promise<FakeMaster> {
    const as = await Promise.all([`${appId}-n1`, `${appId}-n2`].map((id) => new FakeAgent(id).start()));
    const m = await new FakeMaster(wireJob({ jobId: appId }), as).start();
    for (const a of as) a.master = m;
    agents.push(...as);
    masters.push(m);
    return m;
  }

  /** What an agent gives a hosted AM (FakeMaster serves app-1 whatever the key). */
  function amSpec(key: string, m: FakeMaster | undefined, env: Record<string, string> = {}): HostedAmSpec {
    return {
      key,
      appId: 'app-1',
      workerId: 'am.1',
      dir: path.join(dir, key),
      env: { FUXI_MASTER: m?.address ?? '127.0.0.1:1', FUXI_APP_ID: 'app-1', FUXI_AM_ATTEMPT: '1', FUXI_NODE_ID: 'n1', FUXI_LOG_LEVEL: 'info', ...env },
    };
  }

  it('runs hosted AMs to FinishApp, on the main loop and in a thread, with their own logs and exit files', async () => {
    const [a, b] = [await fakeCluster('job-a'), await fakeCluster('job-b')];
    const host = new AmHost({ log: nullLogger, threadInstances: 10 });
    const exits: AmHostExitEvent[] = [];
    host.onExit((e) => exits.push(e));
    expect(host.start(amSpec('small', a, { FUXI_AM_INSTANCES: '6' }))).to.deep.equal({ thread: false });
    expect(host.start(amSpec('large', b, { FUXI_AM_INSTANCES: '50' }))).to.deep.equal({ thread: true });
    expect(host.start(amSpec('small', a, { FUXI_AM_INSTANCES: '6' }))).to.deep.equal({ thread: false }); // repeated: no-op
    expect(host.list().map((x) => [x.key, x.thread])).to.deep.equal([
      ['small', false],
      ['large', true],
    ]);
    await waitFor(() => exits.length === 2, 30_000, 'both AMs to end');
    // A main-loop AM's end is reported once its whole log is in its file.
    expect(fs.readFileSync(path.join(dir, 'small', 'stdout'), 'utf8')).to.include('"application master ended"');
    expect(exits.map((e) => [e.key, e.exitCode, e.signal]).sort()).to.deep.equal([
      ['large', 0, null],
      ['small', 0, null],
    ]);
    expect(a.finished?.succeeded).to.equal(true);
    expect(b.finished?.succeeded).to.equal(true);
    // The main loop's AMs are served at routes of the host's one server; a thread's AM by its own.
    const shared = await host.serverAddresses();
    expect(shared).to.have.length(1);
    expect(a.amAddress).to.equal(`${shared[0]}#${encodeURIComponent('small')}`);
    expect(b.amAddress).to.match(/^127\.0\.0\.1:\d+$/);
    for (const key of ['small', 'large']) {
      expect(fs.readFileSync(path.join(dir, key, 'exit'), 'utf8').trim()).to.equal('0');
      await waitFor(() => fs.readFileSync(path.join(dir, key, 'stdout'), 'utf8').includes('"application finished"'), 5000, `${key}'s log`);
    }
    expect(host.size).to.equal(0);
    host.close();
  });

  it('attributes an error to the AM whose code raised it and ends that AM alone; its leftovers are ignored', async () => {
    const ams = new Map<string, ScriptedAm>();
    const attributed: Array<[string, boolean]> = [];
    const host: AmHost = new AmHost({
      log: nullLogger,
      crashGraceMs: 200,
      createAm: (spec) => {
        const am = new ScriptedAm();
        // Timers the thrower's own code sets carry its async context, as its gRPC callbacks do.
        if (spec.key === 'thrower')
          am.onRun = () => {
            setTimeout(() => attributed.push(['boom', host.attribute(new Error('boom'))]), 20);
            setTimeout(() => attributed.push(['late', host.attribute(new Error('late'))]), 400);
          };
        ams.set(spec.key, am);
        return am;
      },
    });
    const exits: AmHostExitEvent[] = [];
    host.onExit((e) => exits.push(e));
    host.start(amSpec('thrower', undefined));
    host.start(amSpec('neighbour', undefined));
    // Outside every AM's context nothing is attributed: that would be the host's own bug.
    expect(host.attribute(new Error('host'))).to.equal(false);
    await waitFor(() => exits.length === 1, 5000, 'the thrower to end');
    expect(exits[0]).to.deep.include({ key: 'thrower', exitCode: 1, signal: null });
    expect(exits[0]!.message).to.match(/uncaught error: boom/);
    expect(ams.get('thrower')!.stops).to.have.length(1);
    expect(fs.readFileSync(path.join(dir, 'thrower', 'exit'), 'utf8').trim()).to.equal('1');
    expect(host.list().map((x) => x.key)).to.deep.equal(['neighbour']);
    await waitFor(() => attributed.length === 2, 5000, 'the leftover callback');
    // The leftover is the ended AM's: taken (not a host bug) and ignored (no second exit).
    expect(attributed).to.deep.equal([
      ['boom', true],
      ['late', true],
    ]);
    expect(exits).to.have.length(1);
    expect(ams.get('neighbour')!.stops).to.deep.equal([]);
    ams.get('neighbour')!.finish();
    await waitFor(() => exits.length === 2, 5000, 'the neighbour to end');
    expect(exits[1]).to.deep.include({ key: 'neighbour', exitCode: 0 });
    host.close();
  });

  it("runs what a stop, a pause or a resume sets off in that AM's context, whoever asked", async () => {
    // The host's socket handler calls in from outside every AM: an error in what the AM's stop
    // schedules must end that AM alone, not be taken for the host's own (which ends the host).
    const attributed: Array<[string, boolean]> = [];
    class Leaky extends ScriptedAm {
      override stop(reason: string): Promise<void> {
        setImmediate(() => attributed.push(['stop', host.attribute(new Error('in stop'))]));
        return super.stop(reason);
      }
      override pause(): () => void {
        setImmediate(() => attributed.push(['pause', host.attribute(new Error('in pause'))]));
        const resume = super.pause();
        return () => {
          setImmediate(() => attributed.push(['resume', host.attribute(new Error('in resume'))]));
          resume();
        };
      }
    }
    const host: AmHost = new AmHost({ log: nullLogger, crashGraceMs: 200, createAm: () => new Leaky() });
    const exits: AmHostExitEvent[] = [];
    host.onExit((e) => exits.push(e));
    host.start(amSpec('a', undefined));
    host.start(amSpec('b', undefined));
    expect(host.fault('a', 'pause')).to.equal(true);
    expect(host.fault('a', 'resume')).to.equal(true);
    expect(host.stop('b', 1000)).to.equal(true);
    // (The pause's error ends `a`, whose stop then runs too: stop is called for both.)
    await waitFor(() => attributed.filter(([what]) => what === 'stop').length === 2 && exits.length === 2, 5000, 'both AMs to end');
    expect(new Set(attributed.map(([what]) => what))).to.deep.equal(new Set(['pause', 'resume', 'stop']));
    expect(attributed.every(([, taken]) => taken)).to.equal(true);
    expect(exits.map((e) => [e.key, e.exitCode]).sort()).to.deep.equal([
      ['a', 1],
      ['b', 1],
    ]);
    expect(host.attribute(new Error('host'))).to.equal(false);
    host.close();
  });

  it('stops an AM within its grace even when it does not end by itself; pauses and resumes one', async () => {
    const ams = new Map<string, ScriptedAm>();
    const host = new AmHost({ log: nullLogger, createAm: (spec) => ams.set(spec.key, new ScriptedAm()).get(spec.key)! });
    const exits: AmHostExitEvent[] = [];
    host.onExit((e) => exits.push(e));
    host.start(amSpec('stubborn', undefined));
    host.start(amSpec('polite', undefined));
    ams.get('stubborn')!.ignoreStop = true;
    expect(host.fault('polite', 'pause')).to.equal(true);
    expect(host.fault('polite', 'pause')).to.equal(true);
    expect(ams.get('polite')!.paused).to.equal(1);
    host.fault('polite', 'resume');
    expect(ams.get('polite')!.paused).to.equal(0);
    expect(host.fault('nobody', 'throw')).to.equal(false);
    expect(host.stop('polite', 5000)).to.equal(true);
    expect(host.stop('stubborn', 300)).to.equal(true);
    expect(host.stop('nobody', 300)).to.equal(false);
    await waitFor(() => exits.length === 2, 5000, 'both stops');
    expect(exits.map((e) => [e.key, e.exitCode, e.signal])).to.deep.equal([
      ['polite', 1, null],
      ['stubborn', null, 'SIGKILL'],
    ]);
    expect(fs.readFileSync(path.join(dir, 'stubborn', 'exit'), 'utf8').trim()).to.equal('137');
    host.close();
  });

  it('reports a thread AM that ends by itself right at its stop grace deadline with its own exit code; only one that had not ended as killed', async () => {
    const host = new AmHost({ log: nullLogger, threadInstances: 1, threadEntry: new URL('./fake-thread-am.js', import.meta.url) });
    const exits: AmHostExitEvent[] = [];
    host.onExit((e) => exits.push(e));
    const thread = (key: string, end: string) => {
      expect(host.start(amSpec(key, undefined, { FUXI_AM_INSTANCES: '5', FAKE_THREAD_END: end }))).to.deep.equal({ thread: true });
    };
    const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
    thread('at-deadline', 'exit');
    thread('told-then-hung', 'hang');
    thread('stubborn', 'ignore');
    await waitFor(() => ['at-deadline', 'told-then-hung', 'stubborn'].every((k) => fs.existsSync(path.join(dir, k, 'ready'))), 15_000, 'the threads');

    // The race, made to happen: from a setImmediate callback, the stop's 1 ms grace passes and the
    // thread exits by itself (code 0) while this loop is held; when it runs again, its timers come
    // first (the grace terminates the thread, which has exited), then the thread's exit.
    await new Promise<void>((resolve) =>
      setImmediate(() => {
        host.stop('at-deadline', 1);
        const until = Date.now() + 15_000;
        while (!fs.existsSync(path.join(dir, 'at-deadline', 'exiting')) && Date.now() < until) sleepSync(1);
        sleepSync(50);
        resolve();
      }),
    );
    await waitFor(() => exits.length === 1, 5000, 'its end');
    expect(exits[0]).to.deep.include({ key: 'at-deadline', exitCode: 0, signal: null, message: 'finished' });
    expect(fs.readFileSync(path.join(dir, 'at-deadline', 'exit'), 'utf8').trim()).to.equal('0');

    // Its end told, then held up (its log's flush, say) until the grace terminated it: its own end.
    // One that never ended by itself was killed.
    host.stop('told-then-hung', 200);
    host.stop('stubborn', 200);
    await waitFor(() => exits.length === 3, 5000, 'both ends');
    expect(exits.slice(1).map((e) => [e.key, e.exitCode, e.signal])).to.have.deep.members([
      ['told-then-hung', 0, null],
      ['stubborn', null, 'SIGKILL'],
    ]);
    expect(fs.readFileSync(path.join(dir, 'told-then-hung', 'exit'), 'utf8').trim()).to.equal('0');
    expect(fs.readFileSync(path.join(dir, 'stubborn', 'exit'), 'utf8').trim()).to.equal('137');
    host.close();
  });

  it('samples its event loop only while it holds an AM (an empty host does not wake every 10 ms)', async () => {
    const ams = new Map<string, ScriptedAm>();
    const host = new AmHost({ log: nullLogger, createAm: (spec) => ams.set(spec.key, new ScriptedAm()).get(spec.key)! });
    const exits: AmHostExitEvent[] = [];
    host.onExit((e) => exits.push(e));
    const samples = () => host.stats().loopDelayMs.samples;
    await new Promise((r) => setTimeout(r, 150));
    expect(samples(), 'empty host').to.equal(0);
    host.start(amSpec('sampled', undefined));
    await waitFor(() => samples() >= 5, 5000, 'loop samples while an AM runs');
    ams.get('sampled')!.finish();
    await waitFor(() => exits.length === 1, 5000, 'the AM to end');
    const after = samples();
    await new Promise((r) => setTimeout(r, 150));
    expect(samples(), 'empty again').to.be.at.most(after + 1);
    host.start(amSpec('again', undefined));
    await waitFor(() => samples() >= after + 5, 5000, 'sampling again with a new AM');
    host.close();
  });

  it("writes a running AM's log lines to its file in batches within a fraction of a second, and the rest at its end", async () => {
    const ams = new Map<string, ScriptedAm>();
    const host = new AmHost({
      log: nullLogger,
      createAm: (spec, log) => {
        log.info({ step: 1 }, 'first line');
        return ams.set(spec.key, new ScriptedAm()).get(spec.key)!;
      },
    });
    const exits: AmHostExitEvent[] = [];
    host.onExit((e) => exits.push(e));
    host.start(amSpec('chatty', undefined));
    const file = path.join(dir, 'chatty', 'stdout');
    const text = () => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');
    await waitFor(() => text().includes('first line'), 2000, 'the first line in the file while the AM runs');
    expect(exits).to.have.length(0);
    ams.get('chatty')!.finish();
    await waitFor(() => exits.length === 1, 5000, 'the end');
    // Its end is reported with every line in the file.
    expect(text()).to.match(/first line[\s\S]*application master ended/);
    host.close();
  });

  it("sums its AMs' instances by state in stats, and counts their retries, ended AMs' included, without going back", async () => {
    const progress = new Map<string, TaskProgress[]>();
    const task = (over: Partial<TaskProgress>): TaskProgress => ({
      name: 't',
      total: 4,
      pending: 0,
      running: 0,
      succeeded: 0,
      failed: 0,
      retries: 0,
      reexecutions: 0,
      progress: 0,
      backups: 0,
      ...over,
    });
    const ams = new Map<string, ScriptedAm>();
    const host = new AmHost({
      log: nullLogger,
      createAm: (spec) => {
        const am = Object.assign(new ScriptedAm(), { progress: () => progress.get(spec.key) ?? [] });
        ams.set(spec.key, am);
        return am;
      },
    });
    const exits: AmHostExitEvent[] = [];
    host.onExit((e) => exits.push(e));
    host.start(amSpec('a', undefined));
    host.start(amSpec('b', undefined));
    progress.set('a', [task({ pending: 1, running: 2, succeeded: 1, retries: 1 })]);
    progress.set('b', [task({ running: 1, succeeded: 2, failed: 1, retries: 2 }), task({ pending: 4 })]);
    expect(host.stats()).to.deep.include({ instances: { pending: 5, running: 3, succeeded: 3, failed: 1 }, retries: 3 });
    progress.set('a', [task({ succeeded: 4, retries: 2 })]);
    ams.get('a')!.finish();
    await waitFor(() => exits.length === 1, 5000, 'a finished');
    // a's last retry counts, and its instances are gone with it.
    expect(host.stats()).to.deep.include({ instances: { pending: 4, running: 1, succeeded: 2, failed: 1 }, retries: 4 });
    host.close();
  });

  it("serves its AMs at routes of one server, each AM's calls in that AM's own async context; an ended AM's calls fail UNAVAILABLE", async () => {
    const servers = new SharedAmServers(nullLogger);
    const def = loadFuxiProto().AppMasterService.service;
    const seen: Array<[string, string | undefined]> = [];
    const handlers = (name: string) =>
      implement(
        def,
        {
          UpdateAssignments: async () => ({ appliedSeq: '0' }),
          WorkerEvents: async () => {
            seen.push([name, currentAmKey()]);
            return {};
          },
          AgentsTimedOut: async () => ({}),
          GetAppState: async () => ({ appId: name, amAttempt: 1, assignments: [], progress: [], workers: [] }),
          Calls: async () => ({ results: [] }),
        },
        nullLogger,
      );
    const cfg = { bind: '127.0.0.1:0' };
    // The server is opened from inside a's context; b's calls must still run in b's.
    const a = await servers.serving(cfg, { key: 'job-a/am.1', ended: false })(handlers('a'));
    const b = await servers.serving(cfg, { key: 'job-b/am.1', ended: false })(handlers('b'));
    const [shared] = await servers.addresses();
    expect(a.address).to.equal(`${shared}#job-a%2Fam.1`);
    expect(b.address).to.equal(`${shared}#job-b%2Fam.1`);
    const ca = connect(loadFuxiProto().AppMasterService, a.address);
    const cb = connect(loadFuxiProto().AppMasterService, b.address);
    try {
      expect((await ca.GetAppState({})).appId).to.equal('a');
      expect((await cb.GetAppState({})).appId).to.equal('b');
      await cb.WorkerEvents({ nodeId: 'n1', events: [] });
      await ca.WorkerEvents({ nodeId: 'n1', events: [] });
      expect(seen).to.deep.equal([
        ['b', 'job-b/am.1'],
        ['a', 'job-a/am.1'],
      ]);
      await a.shutdown();
      const err = (await ca.GetAppState({}).catch((e: unknown) => e)) as RpcError;
      expect(err).to.be.instanceOf(RpcError);
      expect(err.code).to.equal('UNAVAILABLE');
      expect((await cb.GetAppState({})).appId).to.equal('b');
    } finally {
      ca.close();
      cb.close();
      await servers.close();
    }
  });

  it('leaves no route behind for an AM stopped while the shared server was being set up', async () => {
    const host = new AmHost({ log: nullLogger });
    const exits: AmHostExitEvent[] = [];
    host.onExit((e) => exits.push(e));
    // The first AM of a fresh host: its stop comes before the server it is to be served by is up.
    host.start(amSpec('app-1/am.1', undefined));
    host.stop('app-1/am.1', 2000);
    await waitFor(() => exits.length === 1, 10_000, 'the stopped AM to end');
    const [shared] = await host.serverAddresses();
    const c = connect(loadFuxiProto().AppMasterService, `${shared}#${encodeURIComponent('app-1/am.1')}`);
    try {
      const err = (await c.GetAppState({}).catch((e: unknown) => e)) as RpcError;
      expect(err).to.be.instanceOf(RpcError);
      expect(err.code).to.equal('UNAVAILABLE');
    } finally {
      c.close();
      await host.close();
    }
  });

  for (const [program, bin] of [
    ['the module tree', HOST_MAIN],
    ['the bundle', HOST_BUNDLED],
  ] as const)
    it(`as the fuxi-amhost binary (${program}): an exception thrown inside one AM (main loop or thread) ends it alone; its neighbour finishes`, async function () {
      if (!fs.existsSync(bin)) this.skip(); // compiled without bundling (tsc -b alone)
      await binaryIsolation(bin);
    });

  it('as the fuxi-amhost binary: --help prints the usage; an unknown flag, a missing value or no --socket exits 2 naming it', async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const c = spawn(process.execPath, [HOST_MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
        children.push(c);
        let out = '';
        let err = '';
        c.stdout!.on('data', (d: Buffer) => (out += d.toString()));
        c.stderr!.on('data', (d: Buffer) => (err += d.toString()));
        c.on('exit', (code) => resolve({ code, out, err }));
      });
    const help = await run(['--help']);
    expect(help.code).to.equal(0);
    expect(help.out).to.match(/^usage: fuxi-amhost --socket <path>/);
    const unknown = await run(['--sockets', '/tmp/x.sock']);
    expect(unknown.code).to.equal(2);
    expect(unknown.err).to.contain("fuxi-amhost: Unknown option '--sockets'").and.to.contain('usage: fuxi-amhost');
    expect(unknown.err).to.not.contain('    at '); // no stack trace
    const noValue = await run(['--socket']);
    expect(noValue.code).to.equal(2);
    expect(noValue.err).to.contain("'--socket <value>' argument missing");
    const none = await run([]);
    expect(none.code).to.equal(2);
    expect(none.err).to.contain('--socket <path> is required');
  });

  async function binaryIsolation(bin: string): Promise<void> {
    const stuck = await fakeCluster('job-stuck');
    stuck.down = true; // its AMs keep retrying RegisterApp until the fault ends them
    const fine = await fakeCluster('job-fine');
    fine.delayNextAnswerMs = 1500;
    const socket = path.join(dir, 'host.sock');
    const child = spawn(process.execPath, [bin, '--socket', socket, '--thread-instances', '100', '--log-level', 'warn'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    child.stdout?.on('data', (d) => (out += String(d)));
    child.stderr?.on('data', (d) => (out += String(d)));
    await waitFor(() => fs.existsSync(socket), 10_000, 'the host socket');
    const conn = net.connect(socket);
    const lines = new LineDecoder();
    const msgs: Array<Record<string, unknown>> = [];
    conn.on('data', (c) => msgs.push(...(lines.push(c) as Array<Record<string, unknown>>)));
    let id = 0;
    const call = async (req: Record<string, unknown>) => {
      const n = ++id;
      conn.write(encodeLine({ id: n, ...req }));
      await waitFor(() => msgs.some((m) => m.id === n), 10_000, `answer ${n}`);
      return msgs.find((m) => m.id === n)!;
    };
    expect(await call({ op: 'hello', role: 'agent' })).to.deep.include({ ok: true, ams: [] });
    expect(await call({ op: 'start', am: amSpec('inline-thrower', stuck, { FUXI_AM_INSTANCES: '6' }) })).to.deep.include({ ok: true, thread: false });
    expect(await call({ op: 'start', am: amSpec('thread-thrower', stuck, { FUXI_AM_INSTANCES: '500' }) })).to.deep.include({ ok: true, thread: true });
    expect(await call({ op: 'start', am: amSpec('neighbour', fine, { FUXI_AM_INSTANCES: '6' }) })).to.deep.include({ ok: true, thread: false });
    await new Promise((r) => setTimeout(r, 300));
    expect(await call({ op: 'fault', key: 'inline-thrower', fault: 'throw' })).to.deep.include({ ok: true });
    expect(await call({ op: 'fault', key: 'thread-thrower', fault: 'throw' })).to.deep.include({ ok: true });
    expect(await call({ op: 'fault', key: 'nobody', fault: 'throw' })).to.deep.include({ ok: false });
    const exitOf = (key: string) => msgs.find((m) => m.ev === 'exit' && m.key === key);
    await waitFor(() => !!exitOf('inline-thrower') && !!exitOf('thread-thrower'), 15_000, 'both throwers to end');
    expect(exitOf('inline-thrower')).to.deep.include({ exitCode: 1, signal: null });
    expect(exitOf('thread-thrower')).to.deep.include({ exitCode: 1, signal: null });
    expect(String(exitOf('thread-thrower')!.message)).to.match(/fault injection/);
    await waitFor(() => !!exitOf('neighbour'), 30_000, 'the neighbour to finish');
    expect(exitOf('neighbour'), out).to.deep.include({ exitCode: 0 });
    expect(fine.finished?.succeeded).to.equal(true);
    expect(child.exitCode, out).to.equal(null);
    const st = (await call({ op: 'stats' })) as { stats: { ams: number; pid: number } };
    expect(st.stats).to.deep.include({ ams: 0, pid: child.pid });
    conn.destroy();
  }
});
