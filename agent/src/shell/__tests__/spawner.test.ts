import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readProcStat } from '../proc-table.js';
import { InlineSpawner, ThreadSpawner, type Spawner } from '../spawner.js';
import { alive, waitFor } from './helpers.js';

interface Ended {
  pid: number;
  code: number | null;
  signal: string | null;
}

/** Session id (field 6) and process group (field 5) of `pid`. */
function sessionOf(pid: number): { pgrp: number; session: number } {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { pgrp: Number(rest[2]), session: Number(rest[3]) };
}

for (const [name, make] of [
  ['ThreadSpawner', () => new ThreadSpawner()],
  ['InlineSpawner', () => new InlineSpawner()],
] as Array<[string, () => Spawner]>) {
  describe(`${name}: starting worker processes`, () => {
    let dir: string;
    let spawner: Spawner;
    const started: number[] = [];

    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-spawner-'));
      spawner = make();
    });

    afterEach(() => {
      spawner.close();
      for (const pid of started.splice(0)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* ended */
        }
      }
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it('runs the command in its cwd with exactly its environment, in a session of its own, and reports its exit code', async () => {
      const ends: Ended[] = [];
      const out = path.join(dir, 'out');
      const r = await spawner.spawn(
        { file: '/bin/sh', args: ['-c', 'echo "$(pwd) $ONLY ${HOME:-nohome}" >"$1"; sleep 0.3; exit 3', 'x', out], cwd: dir, env: { ONLY: 'this' } },
        (pid, code, signal) => ends.push({ pid, code, signal }),
      );
      started.push(r.pid);
      expect(r.startTime).to.equal(readProcStat(r.pid)?.startTime);
      expect(sessionOf(r.pid)).to.deep.equal({ pgrp: r.pid, session: r.pid });
      await waitFor(() => ends.length === 1, 10_000, 'the exit');
      expect(ends).to.deep.equal([{ pid: r.pid, code: 3, signal: null }]);
      expect(fs.readFileSync(out, 'utf8')).to.equal(`${fs.realpathSync(dir)} this nohome\n`);
    });

    it('reports the signal that ended the process', async () => {
      const ends: Ended[] = [];
      const r = await spawner.spawn({ file: '/bin/sleep', args: ['30'], cwd: dir, env: {} }, (pid, code, signal) => ends.push({ pid, code, signal }));
      started.push(r.pid);
      process.kill(r.pid, 'SIGTERM');
      await waitFor(() => ends.length === 1, 10_000, 'the exit');
      expect(ends).to.deep.equal([{ pid: r.pid, code: null, signal: 'SIGTERM' }]);
    });

    it('rejects a process that cannot start (a cwd that is not there), naming the reason', async () => {
      let err: (Error & { code?: string }) | undefined;
      await spawner.spawn({ file: '/bin/true', args: [], cwd: path.join(dir, 'missing'), env: {} }, () => {}).catch((e: Error) => (err = e));
      expect(err?.code).to.equal('ENOENT');
    });

    it('starts 50 at once: each one resolves with its own pid and reports its own exit', async () => {
      const ends = new Map<number, number | null>();
      const rs = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          spawner.spawn({ file: '/bin/sh', args: ['-c', `exit ${i}`], cwd: dir, env: {} }, (pid, code) => ends.set(pid, code)),
        ),
      );
      expect(new Set(rs.map((r) => r.pid)).size).to.equal(50);
      await waitFor(() => ends.size === 50, 20_000, 'every exit');
      expect(rs.map((r) => ends.get(r.pid))).to.deep.equal(Array.from({ length: 50 }, (_, i) => i));
    });

    it('after close: spawns are refused, and what it started keeps running', async () => {
      const r = await spawner.spawn({ file: '/bin/sleep', args: ['30'], cwd: dir, env: {} }, () => {});
      started.push(r.pid);
      spawner.close();
      if (spawner instanceof ThreadSpawner) {
        let err: Error | undefined;
        await spawner.spawn({ file: '/bin/true', args: [], cwd: dir, env: {} }, () => {}).catch((e: Error) => (err = e));
        expect(err?.message).to.match(/closed/);
      }
      await new Promise((res) => setTimeout(res, 200));
      expect(alive(r.pid)).to.equal(true);
    });
  });
}

describe('ThreadSpawner: when its thread dies', () => {
  it('still reports the end of what the thread started (through /proc, code and signal unknown), and the next spawn starts a new thread', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-spawner-'));
    const spawner = new ThreadSpawner({ pollMs: 50 });
    const ends: Ended[] = [];
    try {
      const r = await spawner.spawn({ file: '/bin/sleep', args: ['0.5'], cwd: dir, env: {} }, (pid, code, signal) => ends.push({ pid, code, signal }));
      await spawner.killThread();
      expect(spawner.runningCount).to.equal(1);
      expect(alive(r.pid)).to.equal(true);
      await waitFor(() => ends.length === 1, 10_000, 'the exit');
      expect(ends).to.deep.equal([{ pid: r.pid, code: null, signal: null }]);
      const next = await spawner.spawn({ file: '/bin/sh', args: ['-c', 'exit 7'], cwd: dir, env: {} }, (pid, code, signal) => ends.push({ pid, code, signal }));
      await waitFor(() => ends.length === 2, 10_000, 'the second exit');
      expect(ends[1]).to.deep.equal({ pid: next.pid, code: 7, signal: null });
      expect(spawner.runningCount).to.equal(0);
    } finally {
      spawner.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
