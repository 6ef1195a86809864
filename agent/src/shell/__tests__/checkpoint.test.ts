/**
 * One contract suite for every local checkpoint backend (docs/code-style.md, rule 5): the journal, LevelDB and in-memory. Each
 * backend is opened through a factory whose `reopen()` gives a new handle on the same data, as an
 * agent restart does.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FailedPreconditionError, res } from '@fuxi/common';
import type { AgentState, GrantEntry, StateDelta, WorkerEntry } from '../../core/agent-core.js';
import { applyDelta, emptyDelta, emptyState } from '../../core/state-delta.js';
import { LevelCheckpoint, MemoryCheckpoint, type AgentCheckpoint } from '../checkpoint.js';
import { JOURNAL_FILE, JOURNAL_LOCK, JournalCheckpoint } from '../checkpoint-journal.js';
import { readStartTime } from '../proc-table.js';
import { readBootId } from '../process-driver.js';

interface Backend {
  name: string;
  /** A new, empty checkpoint. */
  create(): Promise<AgentCheckpoint>;
  /** A new handle on the data of `cp` (which is closed first). */
  reopen(cp: AgentCheckpoint): Promise<AgentCheckpoint>;
  cleanup(): void;
}

/** A backend kept in a temporary directory: `open(dir)` opens it there, again on a reopen. */
function dirBackend(name: string, open: (dir: string) => Promise<AgentCheckpoint>): Backend {
  const dirs: string[] = [];
  const where = new Map<AgentCheckpoint, string>();
  const opened = async (dir: string): Promise<AgentCheckpoint> => {
    const cp = await open(dir);
    where.set(cp, dir);
    return cp;
  };
  return {
    name,
    create() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-cp-'));
      dirs.push(dir);
      return opened(dir);
    },
    async reopen(cp) {
      await cp.close();
      return opened(where.get(cp)!);
    },
    cleanup() {
      for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
    },
  };
}

const levelBackend = (): Backend => dirBackend('LevelCheckpoint (LevelDB)', (dir) => LevelCheckpoint.open(path.join(dir, 'checkpoint')));

/** Compacts after 2,000 bytes: the contract's longer runs go through several compactions. */
const journalBackend = (): Backend => dirBackend('JournalCheckpoint', (dir) => JournalCheckpoint.open(dir, { compactBytes: 2000 }));

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

for (const backend of [journalBackend(), levelBackend(), memoryBackend()]) {
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

describe('JournalCheckpoint specifics', () => {
  let dir: string;
  const children: ChildProcess[] = [];
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-cp-'));
  });
  afterEach(() => {
    for (const c of children.splice(0)) c.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const journal = (): string => path.join(dir, JOURNAL_FILE);
  const refusal = async (open: () => Promise<unknown>): Promise<Error> => {
    const err = await open().then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err, 'refused').to.be.instanceOf(FailedPreconditionError);
    return err!;
  };

  it('lets one agent at a time open a work dir, and keeps its files to the agent (mode 0600)', async () => {
    const a = await JournalCheckpoint.open(dir);
    expect((await refusal(() => JournalCheckpoint.open(dir))).message).to.match(/already open in this process/);
    expect(fs.statSync(journal()).mode & 0o777).to.equal(0o600);
    expect(fs.statSync(path.join(dir, JOURNAL_LOCK)).mode & 0o777).to.equal(0o600);
    await a.close();
    expect(fs.existsSync(path.join(dir, JOURNAL_LOCK))).to.equal(false);
    await (await JournalCheckpoint.open(dir)).close();
  });

  it('refuses a work dir whose lock a live agent process holds, and takes over the lock of one that is gone', async () => {
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    children.push(other);
    const pid = other.pid!;
    for (let i = 0; i < 100 && readStartTime(pid) === ''; i++) await new Promise((r) => setTimeout(r, 10));
    const lock = (owner: object): void => fs.writeFileSync(path.join(dir, JOURNAL_LOCK), JSON.stringify(owner));
    lock({ pid, startTime: readStartTime(pid), bootId: readBootId() });
    expect((await refusal(() => JournalCheckpoint.open(dir))).message).to.include(`in use by another agent process (pid ${pid}`);
    // The same pid with another start time (a reused pid), and a process that has ended: stale.
    lock({ pid, startTime: '1', bootId: readBootId() });
    await (await JournalCheckpoint.open(dir)).close();
    other.kill('SIGKILL');
    await new Promise((r) => other.once('exit', r));
    lock({ pid, startTime: readStartTime(process.pid), bootId: readBootId() });
    const cp = await JournalCheckpoint.open(dir);
    await cp.write(delta({ meta: META }));
    await cp.close();
    expect((await (await JournalCheckpoint.open(dir)).load()).meta).to.deep.equal(META);
  });

  it('drops a last line torn by a crash, and writes after it load whole', async () => {
    let cp = await JournalCheckpoint.open(dir);
    await cp.write(delta({ meta: META, putWorkers: [worker('app', 'w1', 1)] }));
    await cp.close();
    fs.appendFileSync(journal(), '{"d":{"putWorkers":[{"workerId":"w2"');
    cp = await JournalCheckpoint.open(dir);
    expect((await cp.load()).workers.map((w) => w.workerId)).to.deep.equal(['w1']);
    await cp.write(delta({ putWorkers: [worker('app', 'w3', 3)] }));
    await cp.close();
    cp = await JournalCheckpoint.open(dir);
    expect((await cp.load()).workers.map((w) => w.workerId)).to.deep.equal(['w1', 'w3']);
    await cp.close();
  });

  it('refuses a journal damaged before its last line, naming the line, and one of another format', async () => {
    let cp = await JournalCheckpoint.open(dir);
    await cp.write(delta({ meta: META }));
    await cp.write(delta({ putWorkers: [worker('app', 'w1', 1)] }));
    await cp.close();
    const lines = fs.readFileSync(journal(), 'utf8').split('\n');
    fs.writeFileSync(journal(), [lines[0], '{"d":{"meta"', lines[2], ''].join('\n'));
    const fds = fs.readdirSync('/proc/self/fd').length;
    expect((await refusal(() => JournalCheckpoint.open(dir))).message).to.match(/damaged at line 2/);
    expect(fs.readdirSync('/proc/self/fd').length, 'no descriptor left open').to.equal(fds);
    fs.writeFileSync(journal(), '{"format":2,"s":{}}\n');
    expect((await refusal(() => JournalCheckpoint.open(dir))).message).to.match(/has format 2; this agent reads format 1/);
    // Refused without holding the lock: the next open may try again.
    fs.writeFileSync(journal(), lines[0] + '\n');
    cp = await JournalCheckpoint.open(dir);
    await cp.close();
  });

  it('compacts a grown journal into one snapshot of the live state', async () => {
    const cp = await JournalCheckpoint.open(dir, { compactBytes: 4096 });
    let expected = emptyState();
    for (let i = 0; i < 200; i++) {
      // Workers come and go, as short tasks do: the live state stays small.
      const d = delta({
        meta: { ...META, grantSeq: String(i) },
        putWorkers: [worker('app', `w${i}`, i)],
        delWorkers: i >= 3 ? [{ appId: 'app', workerId: `w${i - 3}` }] : [],
      });
      expected = applyDelta(expected, d);
      await cp.write(d);
    }
    expect(cp.compactions).to.be.greaterThan(5);
    // Past 4,096 bytes and four times the live state (three workers): some 260 KB without compaction.
    expect(fs.statSync(journal()).size).to.be.below(12_000);
    await cp.close();
    const again = await JournalCheckpoint.open(dir);
    expect(await again.load()).to.deep.equal(expected);
    await again.close();
  });

  it('takes over the LevelDB checkpoint of an earlier agent version, then removes it', async () => {
    const level = await LevelCheckpoint.open(path.join(dir, 'checkpoint'));
    await level.write(delta({ meta: META, putGrants: [grant('app', 'map', 2)], putWorkers: [worker('app', 'w1', 1), worker('app', 'w2', 2)] }));
    const before = await level.load();
    await level.close();
    const cp = await JournalCheckpoint.open(dir);
    expect(await cp.load()).to.deep.equal(before);
    expect(fs.existsSync(path.join(dir, 'checkpoint'))).to.equal(false);
    await cp.close();
    const again = await JournalCheckpoint.open(dir);
    expect(await again.load()).to.deep.equal(before);
    await again.close();
  });

  it('writes with sync: true (fdatasync per write) as well', async () => {
    const cp = await JournalCheckpoint.open(dir, { sync: true, compactBytes: 2000 });
    for (let i = 0; i < 20; i++) await cp.write(delta({ meta: { ...META, grantSeq: String(i) }, putWorkers: [worker('app', `w${i}`, i)] }));
    await cp.close();
    const again = await JournalCheckpoint.open(dir);
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
