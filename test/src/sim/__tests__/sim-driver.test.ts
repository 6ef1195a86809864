/**
 * The simulated process driver: timers for workers, fake pids that are never real, kill reports a
 * signal, AM workers go to the in-process runner.
 */
import { expect } from 'chai';
import type { ExitInfo, SpawnSpec } from '@fuxi/agent';
import { draw, PidCounter, SIM_PID_BASE, SimProcessDriver } from '../sim-driver.js';

function spec(over: Partial<SpawnSpec> = {}): SpawnSpec {
  return { workerId: 'map.0.1', appId: 'app-1', suId: 'map', task: 'map', instance: 0, attempt: 1, argv: ['sim'], env: {}, cwd: '', ...over };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('SimProcessDriver', () => {
  it('runs a worker for SIM_DURATION_MS and reports exit code SIM_EXIT_CODE', async () => {
    const d = new SimProcessDriver({ pids: new PidCounter() });
    const exits: ExitInfo[] = [];
    d.onExit((e) => exits.push(e));
    const r = await d.spawn(spec({ env: { SIM_DURATION_MS: '30', SIM_EXIT_CODE: '3' } }));
    expect(r.pid).to.be.at.least(SIM_PID_BASE);
    expect(d.running).to.equal(1);
    await sleep(80);
    expect(exits).to.deep.equal([{ appId: 'app-1', workerId: 'map.0.1', pid: r.pid, exitCode: 3, signal: null }]);
    expect(d.running).to.equal(0);
  });

  it('fails workers of a failure-prone host with the probability it gives, drawn per worker', async () => {
    const asked: string[] = [];
    const d = new SimProcessDriver({
      pids: new PidCounter(),
      hostFailure: (s) => {
        asked.push(s.workerId);
        return 0.5;
      },
    });
    const exits: ExitInfo[] = [];
    d.onExit((e) => exits.push(e));
    for (let i = 0; i < 40; i++) await d.spawn(spec({ workerId: `map.${i}.1`, env: { SIM_DURATION_MS: '5' } }));
    await sleep(60);
    const failed = exits.filter((e) => e.exitCode === 1).map((e) => e.workerId);
    expect(asked).to.have.length(40);
    expect(failed).to.deep.equal(exits.filter((e) => draw(`app-1/${e.workerId}/host`) < 0.5).map((e) => e.workerId));
    expect(failed.length).to.be.within(10, 30);
    // A host that is not failure-prone fails none of them.
    const sound = new SimProcessDriver({ pids: new PidCounter() });
    const ok: ExitInfo[] = [];
    sound.onExit((e) => ok.push(e));
    for (let i = 0; i < 10; i++) await sound.spawn(spec({ workerId: `map.${i}.1`, env: { SIM_DURATION_MS: '5' } }));
    await sleep(40);
    expect(ok.every((e) => e.exitCode === 0)).to.equal(true);
  });

  it('gives unique pids across drivers sharing a counter, above any real pid', async () => {
    const pids = new PidCounter();
    const a = new SimProcessDriver({ pids });
    const b = new SimProcessDriver({ pids });
    const got = new Set<number>();
    for (let i = 0; i < 5; i++) {
      got.add((await a.spawn(spec({ workerId: `a${i}` }))).pid);
      got.add((await b.spawn(spec({ workerId: `b${i}` }))).pid);
    }
    expect(got.size).to.equal(10);
    for (const p of got) expect(p).to.be.greaterThan(4_194_304);
    a.shutdown();
    b.shutdown();
  });

  it('kill ends a worker with SIGTERM, asynchronously, once', async () => {
    const d = new SimProcessDriver({ pids: new PidCounter() });
    const exits: ExitInfo[] = [];
    d.onExit((e) => exits.push(e));
    const { pid } = await d.spawn(spec());
    d.kill(pid);
    d.kill(pid);
    expect(exits).to.have.length(0);
    await sleep(10);
    expect(exits).to.deep.equal([{ appId: 'app-1', workerId: 'map.0.1', pid, exitCode: null, signal: 'SIGTERM' }]);
    d.kill(pid);
    await sleep(10);
    expect(exits).to.have.length(1);
  });

  it('hands __am__ workers to runAppMaster and reports its exit code', async () => {
    let finish!: (code: number) => void;
    let killed = 0;
    const d = new SimProcessDriver({
      pids: new PidCounter(),
      runAppMaster: () => ({ exited: new Promise<number>((r) => (finish = r)), kill: () => killed++ }),
    });
    const exits: ExitInfo[] = [];
    d.onExit((e) => exits.push(e));
    const { pid } = await d.spawn(spec({ suId: '__am__', task: '__am__', workerId: 'am.1' }));
    finish(0);
    await sleep(5);
    expect(exits).to.deep.equal([{ appId: 'app-1', workerId: 'am.1', pid, exitCode: 0, signal: null }]);
    const second = await d.spawn(spec({ suId: '__am__', task: '__am__', workerId: 'am.2' }));
    d.kill(second.pid);
    expect(killed).to.equal(1);
    await sleep(5);
    expect(exits[1]).to.include({ workerId: 'am.2', signal: 'SIGTERM' });
  });

  it('fails a SIM_FAIL_PROBABILITY share of workers with SIM_FAIL_EXIT_CODE, the same ones on every run', async () => {
    const run = async () => {
      const d = new SimProcessDriver({ pids: new PidCounter() });
      const exits = new Map<string, number | null>();
      d.onExit((e) => exits.set(e.workerId, e.exitCode));
      for (let i = 0; i < 400; i++)
        await d.spawn(spec({ workerId: `map.${i}.1`, instance: i, env: { SIM_DURATION_MS: '5', SIM_FAIL_PROBABILITY: '0.25', SIM_FAIL_EXIT_CODE: '9' } }));
      await sleep(60);
      return exits;
    };
    const a = await run();
    const b = await run();
    expect(a.size).to.equal(400);
    const failed = [...a.values()].filter((c) => c === 9).length;
    expect([...a.values()].every((c) => c === 0 || c === 9)).to.equal(true);
    expect(failed).to.be.within(70, 130); // 100 expected
    expect([...b.entries()]).to.deep.equal([...a.entries()]);
    // Another attempt of the same instance draws again.
    expect(draw('app-1/map.0.1')).to.not.equal(draw('app-1/map.0.2'));
  });

  it('draw spreads evenly over [0, 1)', () => {
    const buckets = new Array(10).fill(0) as number[];
    for (let i = 0; i < 10_000; i++) {
      const x = draw(`app-${i % 7}/w.${i}.1`);
      expect(x).to.be.within(0, 0.9999999999);
      buckets[Math.floor(x * 10)]!++;
    }
    for (const b of buckets) expect(b).to.be.within(850, 1150);
  });
});
