/**
 * One contract suite for every local checkpoint backend (docs/code-style.md, rule 5): LevelDB and in-memory. Each
 * backend is opened through a factory whose `reopen()` gives a new handle on the same data, as an
 * agent restart does.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FailedPreconditionError, res } from '@fuxi/common';
import type { AgentState, GrantEntry, StateDelta, WorkerEntry } from '../../core/agent-core.js';
import { applyDelta, emptyDelta, emptyState } from '../../core/state-delta.js';
import { LevelCheckpoint, MemoryCheckpoint, type AgentCheckpoint } from '../checkpoint.js';

interface Backend {
  name: string;
  /** A new, empty checkpoint. */
  create(): Promise<AgentCheckpoint>;
  /** A new handle on the data of `cp` (which is closed first). */
  reopen(cp: AgentCheckpoint): Promise<AgentCheckpoint>;
  cleanup(): void;
}

function levelBackend(): Backend {
  const dirs: string[] = [];
  const where = new Map<AgentCheckpoint, string>();
  return {
    name: 'LevelCheckpoint (LevelDB)',
    async create() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-cp-'));
      dirs.push(dir);
      const cp = await LevelCheckpoint.open(path.join(dir, 'checkpoint'));
      where.set(cp, path.join(dir, 'checkpoint'));
      return cp;
    },
    async reopen(cp) {
      await cp.close();
      const dir = where.get(cp)!;
      const again = await LevelCheckpoint.open(dir);
      where.set(again, dir);
      return again;
    },
    cleanup() {
      for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
    },
  };
}

function memoryBackend(): Backend {
  return {
    name: 'MemoryCheckpoint',
    create: () => Promise.resolve(new MemoryCheckpoint()),
    async reopen(cp) {
      await cp.close();
      return (cp as MemoryCheckpoint).reopen();
    },
    cleanup() {},
  };
}

// ---------------------------------------------------------------- factories

function grant(appId: string, suId: string, slots: number, amAttempt = 1): GrantEntry {
  return { appId, suId, slots, resource: res(500, 256), amAttempt };
}

function worker(appId: string, workerId: string, order: number, over: Partial<WorkerEntry> = {}): WorkerEntry {
  return {
    workerId,
    appId,
    suId: 'map',
    task: 'map',
    instance: order,
    attempt: 1,
    amAttempt: 2,
    amAddress: '127.0.0.1:7100',
    nodeId: 'n1',
    command: { argv: ['sh', '-c', 'echo "${instance}"; sleep 30'], env: { A: 'b c', EMPTY: '' }, cwd: '' },
    resource: res(500, 256),
    state: 'RUNNING',
    pid: 4000 + order,
    startTime: String(123456 + order),
    bootId: '0b1c2d3e-aaaa-bbbb-cccc-000000000001',
    exitCode: null,
    signal: null,
    message: '',
    acceptedAtMs: 1_700_000_000_000 + order,
    startedAtMs: 1_700_000_000_100 + order,
    finishedAtMs: 0,
    stopReason: '',
    order,
    startOrder: order,
    ...over,
  };
}

function delta(over: Partial<StateDelta>): StateDelta {
  return { ...emptyDelta(), ...over };
}

const META = { nodeId: 'n1', epoch: '7', grantEpoch: '7', grantSeq: '12' };

for (const backend of [levelBackend(), memoryBackend()]) {
  describe(`agent checkpoint contract: ${backend.name}`, () => {
    let cp: AgentCheckpoint;

    beforeEach(async () => {
      cp = await backend.create();
    });
    afterEach(async () => {
      await cp.close().catch(() => {});
      backend.cleanup();
    });

    it('starts empty', async () => {
      expect(await cp.load()).to.deep.equal(emptyState());
    });

    it('stores meta, grants, apps and the worker registry, and gives them back after a reopen', async () => {
      await cp.write(
        delta({
          meta: META,
          putGrants: [grant('app1', 'map', 3), grant('app1', '__am__', 1)],
          putApps: [{ appId: 'app1', amAttempt: 2, amAddress: '127.0.0.1:7100' }],
          putWorkers: [worker('app1', 'map.0.1', 1), worker('app1', 'map.1.1', 2, { state: 'FAILED', exitCode: 7, message: 'exit code 7', finishedAtMs: 5 })],
        }),
      );
      const expected: AgentState = {
        meta: META,
        grants: [grant('app1', '__am__', 1), grant('app1', 'map', 3)],
        apps: [{ appId: 'app1', amAttempt: 2, amAddress: '127.0.0.1:7100' }],
        workers: [worker('app1', 'map.0.1', 1), worker('app1', 'map.1.1', 2, { state: 'FAILED', exitCode: 7, message: 'exit code 7', finishedAtMs: 5 })],
      };
      const sortGrants = (s: AgentState) => ({ ...s, grants: [...s.grants].sort((a, b) => (a.suId < b.suId ? -1 : 1)) });
      expect(sortGrants(await cp.load())).to.deep.equal(expected);
      cp = await backend.reopen(cp);
      expect(sortGrants(await cp.load())).to.deep.equal(expected);
    });

    it('applies later writes over earlier ones: puts replace, deletes remove, untouched keys stay', async () => {
      await cp.write(delta({ meta: META, putGrants: [grant('a', 'x', 1), grant('b', 'y', 2)], putWorkers: [worker('a', 'w1', 1), worker('a', 'w2', 2)] }));
      await cp.write(
        delta({
          meta: { ...META, grantSeq: '13' },
          putGrants: [grant('a', 'x', 4)],
          delGrants: [{ appId: 'b', suId: 'y' }],
          putWorkers: [worker('a', 'w2', 2, { state: 'SUCCEEDED', exitCode: 0 })],
          delWorkers: [{ appId: 'a', workerId: 'w1' }],
          putApps: [{ appId: 'a', amAttempt: 3, amAddress: 'h:1' }],
        }),
      );
      await cp.write(delta({ delApps: ['a'], delGrants: [{ appId: 'nope', suId: 'nope' }] })); // deleting a missing key is fine
      cp = await backend.reopen(cp);
      const s = await cp.load();
      expect(s.meta.grantSeq).to.equal('13');
      expect(s.grants).to.deep.equal([grant('a', 'x', 4)]);
      expect(s.apps).to.deep.equal([]);
      expect(s.workers.map((w) => [w.workerId, w.state, w.exitCode])).to.deep.equal([['w2', 'SUCCEEDED', 0]]);
    });

    it('keeps ids apart whatever characters they hold (separators, unicode, empty-looking)', async () => {
      const odd = ['a/b', 'a\u0000b', 'a"b', '..', 'ünï 💥', ':', 'g:x'];
      await cp.write(delta({ putWorkers: odd.map((id, i) => worker(id, id, i + 1)), putGrants: odd.map((id) => grant(id, id, 1)) }));
      // Keys that would collide under naive joining stay distinct.
      await cp.write(delta({ putGrants: [grant('a', 'b:c', 1), grant('a:b', 'c', 2)] }));
      cp = await backend.reopen(cp);
      const s = await cp.load();
      expect(s.workers.map((w) => w.workerId)).to.deep.equal(odd);
      expect(s.grants).to.have.length(odd.length + 2);
      expect(s.grants.find((g) => g.appId === 'a:b')?.slots).to.equal(2);
    });

    it('returns workers in acceptance order, not key order', async () => {
      await cp.write(delta({ putWorkers: [worker('z', 'w', 3), worker('a', 'w', 10), worker('m', 'w', 1)] }));
      expect((await cp.load()).workers.map((w) => w.appId)).to.deep.equal(['m', 'z', 'a']);
    });

    it('load() returns copies: changing them changes nothing stored', async () => {
      await cp.write(delta({ putWorkers: [worker('a', 'w1', 1)] }));
      const s = await cp.load();
      s.workers[0]!.state = 'KILLED';
      s.workers[0]!.command.argv.push('x');
      expect((await cp.load()).workers[0]).to.deep.equal(worker('a', 'w1', 1));
    });

    it('matches applyDelta over many writes (what the agent core replays)', async () => {
      let model = emptyState();
      for (let i = 0; i < 50; i++) {
        const d = delta({
          meta: { ...META, grantSeq: String(i) },
          putGrants: [grant('app', `su${i % 5}`, i % 3)],
          delGrants: i % 7 === 0 ? [{ appId: 'app', suId: `su${(i + 1) % 5}` }] : [],
          putWorkers: [worker('app', `w${i % 9}`, i % 9, { state: i % 2 ? 'RUNNING' : 'SUCCEEDED' })],
          delWorkers: i % 4 === 0 ? [{ appId: 'app', workerId: `w${(i + 3) % 9}` }] : [],
        });
        await cp.write(d);
        model = applyDelta(model, d);
      }
      const s = await cp.load();
      const byKey = (st: AgentState) => ({ ...st, grants: [...st.grants].sort((a, b) => (a.suId < b.suId ? -1 : 1)) });
      expect(byKey(s)).to.deep.equal(byKey(model));
    });

    it('refuses to be used after close', async () => {
      await cp.close();
      let err: unknown;
      try {
        await cp.write(delta({ meta: META }));
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(FailedPreconditionError);
      err = undefined;
      try {
        await cp.load();
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(FailedPreconditionError);
    });
  });
}

describe('LevelCheckpoint specifics', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-cp-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('lets one agent at a time open a work dir', async () => {
    const a = await LevelCheckpoint.open(path.join(dir, 'checkpoint'));
    let err: unknown;
    try {
      await LevelCheckpoint.open(path.join(dir, 'checkpoint'));
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(FailedPreconditionError);
    expect((err as Error).message).to.match(/in use by another agent/);
    await a.close();
    const b = await LevelCheckpoint.open(path.join(dir, 'checkpoint'));
    await b.close();
  });

  it('writes with sync: true (fsync per batch) as well', async () => {
    const cp = await LevelCheckpoint.open(path.join(dir, 'checkpoint'), { sync: true });
    for (let i = 0; i < 20; i++) await cp.write(delta({ meta: { ...META, grantSeq: String(i) }, putWorkers: [worker('app', `w${i}`, i)] }));
    await cp.close();
    const again = await LevelCheckpoint.open(path.join(dir, 'checkpoint'));
    const s = await again.load();
    await again.close();
    expect(s.meta.grantSeq).to.equal('19');
    expect(s.workers).to.have.length(20);
  });
});

describe('MemoryCheckpoint fault injection', () => {
  it('failWrites makes the next writes fail without storing anything', async () => {
    const cp = new MemoryCheckpoint();
    cp.failWrites = 1;
    let failed = false;
    await cp.write(delta({ meta: META })).catch(() => (failed = true));
    expect(failed).to.equal(true);
    expect(await cp.load()).to.deep.equal(emptyState());
    await cp.write(delta({ meta: META }));
    expect((await cp.load()).meta).to.deep.equal(META);
  });
});
