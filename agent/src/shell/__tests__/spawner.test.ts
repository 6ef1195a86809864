import { expect } from 'chai';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { channelPort, DIE_BEFORE_REPLY_ENV, type ChannelProcess } from '../helper-channel.js';
import { readProcStat } from '../proc-table.js';
import { HELPER_NODE_ARGS, helperForkOptions, HelperSpawner, InlineSpawner, SpawnOutcomeUnknownError, type Spawner } from '../spawner.js';
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
  ['HelperSpawner (a helper process)', () => new HelperSpawner()],
  ['HelperSpawner (a thread)', () => new HelperSpawner({ helper: 'thread' })],
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
      if (spawner instanceof HelperSpawner) {
        let err: Error | undefined;
        await spawner.spawn({ file: '/bin/true', args: [], cwd: dir, env: {} }, () => {}).catch((e: Error) => (err = e));
        expect(err?.message).to.match(/closed/);
      }
      await new Promise((res) => setTimeout(res, 200));
      expect(alive(r.pid)).to.equal(true);
    });
  });
}

for (const helper of ['process', 'thread'] as const) {
  describe(`HelperSpawner: when its helper ${helper} dies`, () => {
    it('still reports the end of what the helper started (through /proc, code and signal unknown), and the next spawn starts a new helper', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-spawner-'));
      const spawner = new HelperSpawner({ helper, pollMs: 50 });
      const ends: Ended[] = [];
      try {
        const r = await spawner.spawn({ file: '/bin/sleep', args: ['0.5'], cwd: dir, env: {} }, (pid, code, signal) => ends.push({ pid, code, signal }));
        const first = spawner.helperPid;
        await spawner.killHelper();
        expect(spawner.runningCount).to.equal(1);
        expect(alive(r.pid)).to.equal(true);
        await waitFor(() => ends.length === 1, 10_000, 'the exit');
        expect(ends).to.deep.equal([{ pid: r.pid, code: null, signal: null }]);
        const next = await spawner.spawn({ file: '/bin/sh', args: ['-c', 'exit 7'], cwd: dir, env: {} }, (pid, code, signal) =>
          ends.push({ pid, code, signal }),
        );
        if (helper === 'process') expect(spawner.helperPid).to.be.a('number').and.not.equal(first);
        await waitFor(() => ends.length === 2, 10_000, 'the second exit');
        expect(ends[1]).to.deep.equal({ pid: next.pid, code: 7, signal: null });
        expect(spawner.runningCount).to.equal(0);
      } finally {
        spawner.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

describe('HelperSpawner: the helper process is kept small', () => {
  it('is forked with HELPER_NODE_ARGS (a 1 MB young generation, no V8 threads), not with the flags of the process that starts it', () => {
    const o = helperForkOptions();
    expect(o.execArgv)
      .to.deep.equal([...HELPER_NODE_ARGS])
      .and.deep.equal(['--max-semi-space-size=1', '--single-threaded']);
    expect(o.stdio).to.deep.equal(['ignore', 'ignore', 'inherit', 'ipc']);
  });

  it('a process with those flags starts and runs the helper (Node accepts them)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-spawner-'));
    const spawner = new HelperSpawner();
    try {
      const ends: Ended[] = [];
      const r = await spawner.spawn({ file: '/bin/sh', args: ['-c', 'exit 3'], cwd: dir, env: {} }, (pid, code, signal) => ends.push({ pid, code, signal }));
      await waitFor(() => ends.length === 1, 10_000, 'the exit');
      expect(ends).to.deep.equal([{ pid: r.pid, code: 3, signal: null }]);
      expect(alive(spawner.helperPid as number)).to.equal(true);
    } finally {
      spawner.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('HelperSpawner: a helper process killed after the fork, before its reply', () => {
  it('rejects the spawn as of unknown outcome (the process runs on, unwatched here), and the next spawn starts a new helper', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-spawner-'));
    const spawner = new HelperSpawner({ pollMs: 50 });
    const out = path.join(dir, 'pid');
    let worker = 0;
    try {
      let first: Promise<unknown>;
      // The helper is forked with the spawn, synchronously: it takes the hook in its environment.
      process.env[DIE_BEFORE_REPLY_ENV] = '1';
      try {
        first = spawner.spawn({ file: '/bin/sh', args: ['-c', 'echo $$ >"$1"; exec sleep 30', 'x', out], cwd: dir, env: {} }, () => {});
      } finally {
        delete process.env[DIE_BEFORE_REPLY_ENV];
      }
      const helper = spawner.helperPid as number;
      const err = await first.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(SpawnOutcomeUnknownError);
      // The spawn fails as the helper's channel closes, which can be a moment before its process is gone.
      await waitFor(() => !alive(helper), 10_000, 'the helper to be gone');
      await waitFor(() => fs.existsSync(out) && fs.readFileSync(out, 'utf8').trim() !== '', 10_000, 'the worker to start');
      worker = Number(fs.readFileSync(out, 'utf8').trim());
      expect(alive(worker)).to.equal(true);
      expect(spawner.runningCount).to.equal(0);
      const ends: Ended[] = [];
      const next = await spawner.spawn({ file: '/bin/sh', args: ['-c', 'exit 7'], cwd: dir, env: {} }, (pid, code, signal) => ends.push({ pid, code, signal }));
      expect(spawner.helperPid).to.be.a('number').and.not.equal(helper);
      await waitFor(() => ends.length === 1, 10_000, 'the next exit');
      expect(ends).to.deep.equal([{ pid: next.pid, code: 7, signal: null }]);
    } finally {
      spawner.close();
      if (worker > 0) process.kill(worker, 'SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('HelperSpawner: the helper process ends with the agent', () => {
  it('an agent killed with SIGKILL takes its helper with it; the workers the helper started run on', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-spawner-'));
    // A stand-in agent: starts a helper, has it start a worker, prints both pids, then waits.
    const script = [
      `import { HelperSpawner } from ${JSON.stringify(new URL('../spawner.js', import.meta.url).href)};`,
      'setInterval(() => {}, 1000);',
      'const s = new HelperSpawner();',
      `const r = await s.spawn({ file: '/bin/sleep', args: ['30'], cwd: ${JSON.stringify(dir)}, env: {} }, () => {});`,
      'console.log(JSON.stringify({ helper: s.helperPid, worker: r.pid }));',
    ].join('\n');
    const agent = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let pids: { helper: number; worker: number } | undefined;
    try {
      let out = '';
      agent.stdout.on('data', (b: Buffer) => (out += b.toString()));
      await waitFor(() => out.includes('\n'), 20_000, 'the stand-in agent to start its worker');
      pids = JSON.parse(out) as { helper: number; worker: number };
      expect(alive(pids.helper)).to.equal(true);
      expect(readProcStat(pids.helper)?.ppid).to.equal(agent.pid);
      expect(fs.readFileSync(`/proc/${pids.helper}/cmdline`, 'utf8')).to.match(/^fuxi-spawn-helper/);
      agent.kill('SIGKILL');
      await waitFor(() => !alive(pids!.helper), 10_000, 'the helper to end');
      expect(alive(pids.worker)).to.equal(true);
    } finally {
      if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGKILL');
      for (const pid of [pids?.helper, pids?.worker]) {
        try {
          if (pid) process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('spawn helper: its channel to the agent (helper-channel.ts)', () => {
  /** A process forked with a channel, whose writes fail with `sendError` (EPIPE: the agent is gone). */
  function fakeProcess(sendError: Error | null) {
    const handlers = new Map<string, Array<(...a: never[]) => void>>();
    const p = {
      connected: true,
      sent: [] as unknown[],
      exits: [] as number[],
      send(message: unknown, _h: undefined, _o: undefined, callback: (error: Error | null) => void): boolean {
        p.sent.push(message);
        setImmediate(() => callback(sendError));
        return sendError === null;
      },
      on(ev: string, f: (...a: never[]) => void) {
        handlers.set(ev, [...(handlers.get(ev) ?? []), f]);
        return p;
      },
      exit(code: number) {
        p.exits.push(code);
      },
      emit(ev: string) {
        for (const f of handlers.get(ev) ?? []) (f as () => void)();
      },
    };
    return p;
  }

  it('sends replies; a reply the closed channel cannot take ends the helper quietly (no unhandled EPIPE), as the channel end does', async () => {
    const ok = fakeProcess(null);
    channelPort(ok as ChannelProcess).postMessage({ t: 'exit', pid: 1, code: 0, signal: null });
    await new Promise((r) => setImmediate(r));
    expect(ok.sent).to.have.length(1);
    expect(ok.exits).to.deep.equal([]);
    ok.emit('disconnect');
    expect(ok.exits).to.deep.equal([0]);

    const gone = fakeProcess(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    const port = channelPort(gone as ChannelProcess);
    port.postMessage({ t: 'exit', pid: 2, code: 0, signal: null });
    await new Promise((r) => setImmediate(r));
    expect(gone.exits).to.deep.equal([0]);
    // Once it knows the channel is closed, nothing is written.
    gone.connected = false;
    port.postMessage({ t: 'exit', pid: 3, code: 0, signal: null });
    expect(gone.sent).to.have.length(1);
  });
});
