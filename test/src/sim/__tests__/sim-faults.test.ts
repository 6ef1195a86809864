/**
 * Fault-injection support of the simulated driver (agent restarts: detach, probe, reattach; AM
 * crash and pause) and the mergeable latency histogram the hosts report with.
 */
import { expect } from 'chai';
import type { ExitInfo, SpawnSpec } from '@fuxi/agent';
import { Histogram } from '../histogram.js';
import { PidCounter, SimProcessDriver } from '../sim-driver.js';

function spec(over: Partial<SpawnSpec> = {}): SpawnSpec {
  return { workerId: 'map.0.1', appId: 'app-1', suId: 'map', task: 'map', instance: 0, attempt: 1, argv: ['sim'], env: {}, cwd: '', ...over };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const reg = (pid: number, workerId = 'map.0.1') => ({ appId: 'app-1', workerId, pid, startTime: String(pid), bootId: 'sim' });

describe('SimProcessDriver fault injection', () => {
  it('after close(), records exits for probe() and reports the rest on reattach()', async () => {
    const d = new SimProcessDriver({ pids: new PidCounter() });
    const exits: ExitInfo[] = [];
    d.onExit((e) => exits.push(e));
    const a = await d.spawn(spec({ workerId: 'a', env: { SIM_DURATION_MS: '10', SIM_EXIT_CODE: '2' } }));
    const b = await d.spawn(spec({ workerId: 'b', env: { SIM_DURATION_MS: '10' } }));
    const c = await d.spawn(spec({ workerId: 'c', env: { SIM_DURATION_MS: '100000' } }));
    d.close();
    await sleep(40);
    expect(exits).to.have.length(0);
    // The restarted agent probes what its checkpoint knows.
    const restarted: ExitInfo[] = [];
    d.onExit((e) => restarted.push(e));
    expect(d.probe(reg(a.pid, 'a'))).to.deep.equal({ kind: 'exited', exitCode: 2 });
    expect(d.probe(reg(c.pid, 'c'))).to.deep.equal({ kind: 'alive', pid: c.pid, startTime: String(c.pid), bootId: 'sim' });
    expect(d.probe(reg(999, 'x'))).to.deep.equal({ kind: 'gone' });
    d.reattach();
    // b was not probed: reported now, to the new callback; a was not reported twice.
    expect(restarted.map((e) => e.workerId)).to.deep.equal(['b']);
    expect(restarted[0]).to.include({ pid: b.pid, exitCode: 0 });
    d.shutdown();
  });

  it('crashAppMaster stops the AM and reports its worker killed by SIGKILL', async () => {
    let killed = 0;
    const d = new SimProcessDriver({ pids: new PidCounter(), runAppMaster: () => ({ exited: new Promise<number>(() => undefined), kill: () => killed++ }) });
    const exits: ExitInfo[] = [];
    d.onExit((e) => exits.push(e));
    const { pid } = await d.spawn(spec({ suId: '__am__', task: '__am__', workerId: 'am.1', env: { FUXI_AM_ATTEMPT: '2' } }));
    expect(d.appMasters()).to.deep.equal([{ appId: 'app-1', amAttempt: 2, workerId: 'am.1' }]);
    expect(d.crashAppMaster('other')).to.equal(false);
    expect(d.crashAppMaster('app-1')).to.equal(true);
    expect(killed).to.equal(1);
    expect(exits).to.deep.equal([{ appId: 'app-1', workerId: 'am.1', pid, exitCode: null, signal: 'SIGKILL' }]);
    expect(d.appMasters()).to.have.length(0);
  });

  it('pauseAppMaster hands the pause to the AM and passes its recovery time back', async () => {
    const paused: number[] = [];
    const d = new SimProcessDriver({
      pids: new PidCounter(),
      runAppMaster: () => ({ exited: new Promise<number>(() => undefined), kill: () => undefined, pause: (ms) => (paused.push(ms), Promise.resolve(ms + 1)) }),
    });
    await d.spawn(spec({ suId: '__am__', task: '__am__', workerId: 'am.1' }));
    expect(d.pauseAppMaster('nope', 5)).to.equal(undefined);
    expect(await d.pauseAppMaster('app-1', 50)).to.equal(51);
    expect(paused).to.deep.equal([50]);
    d.shutdown();
  });

  it('tells the observer about every start and end', async () => {
    const seen: string[] = [];
    const d = new SimProcessDriver({
      pids: new PidCounter(),
      observer: { spawned: (s) => seen.push(`+${s.workerId}`), finished: (s, code, sig) => seen.push(`-${s.workerId}:${code ?? sig}`) },
    });
    d.onExit(() => undefined);
    const { pid } = await d.spawn(spec({ env: { SIM_DURATION_MS: '5' } }));
    await d.spawn(spec({ workerId: 'k' }));
    await sleep(30);
    d.kill(pid + 1);
    await sleep(5);
    expect(seen).to.deep.equal(['+map.0.1', '+k', '-map.0.1:0', '-k:SIGTERM']);
  });
});

describe('Histogram', () => {
  it('keeps exact count, avg and stddev and percentiles within 2 %, and merges', () => {
    const a = new Histogram();
    const b = new Histogram();
    for (let i = 1; i <= 100; i++) (i % 2 ? a : b).add(i / 10);
    const m = Histogram.from(JSON.parse(JSON.stringify(a.toJSON()))).merge(b);
    expect(m.count).to.equal(100);
    expect(m.avg).to.be.closeTo(5.05, 1e-9);
    expect(m.stddev).to.be.closeTo(2.8866, 1e-3);
    expect(m.percentile(50)).to.be.closeTo(5.0, 0.1);
    expect(m.percentile(99)).to.be.closeTo(9.9, 0.2);
    expect(m.percentile(100)).to.equal(10);
    expect(new Histogram().percentile(50)).to.be.NaN;
  });
});
