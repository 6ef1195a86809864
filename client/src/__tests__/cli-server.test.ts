/**
 * `fuxi cli-server` and the bin's fast path to it (FUXI_CLI_SERVER=1), as users run them: the
 * bundled bin (`make build`) in separate processes against a fake master. The first command runs
 * in its own process and starts the server; the next ones are run by it, in their own folder with
 * their own settings; a caller of another build stops it; a stopped one holds no command; it ends
 * when idle; a folder others can enter is never used; a server that drops a request is an error,
 * not a second run.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildIdOf, cliServerPaths, ensurePrivateDir, servedByServer } from '../cli/cli-server-dir.js';
import { BIN, BUNDLE, clientDir, type Result } from './bundle-files.js';
import { FakeMaster } from './fake-cluster.js';

/**
 * This process's environment without FUXI_* variables: other tests in this mocha process set some
 * (FUXI_MAX_MESSAGE_BYTES, which keeps a command off the server), and each command here names its own.
 */
const NO_FUXI_ENV = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('FUXI_')));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe('fuxi cli-server: the paths and what it serves', () => {
  it('serves submit (without --wait), status, list and kill; anything else runs in the process', () => {
    const cases: Array<[string[], boolean]> = [
      [['submit', 'job.yaml'], true],
      [['--master', 'h:1', 'submit', 'job.yaml', '--id', 'x'], true],
      [['-o', 'json', 'status', 'j'], true],
      [['--output', 'json', 'list'], true],
      [['kill', 'j'], true],
      [['submit', 'job.yaml', '--wait'], false],
      [['wait', 'j'], false],
      [['logs', 'j', 't', '0'], false],
      [['--master', 'submit', 'nodes'], false], // "submit" is --master's value
      [['status', '--help'], false],
      [['--version'], false],
      [['cli-server'], false],
      [[], false],
      // Files only the caller can open: its stdin, a <(...) it was given.
      [['submit', '-f', '/dev/stdin'], false],
      [['submit', '-f', '/dev/fd/63'], false],
      [['submit', '--jobs=/proc/self/fd/5'], false],
      [['submit', '-'], false],
      [['submit', '-f', 'jobs.jsonl'], true],
    ];
    for (const [args, served] of cases) expect(servedByServer(args), args.join(' ')).to.equal(served);
  });

  it('uses only a folder of its own user that no one else can enter', () => {
    const root = mkdtempSync(join(tmpdir(), 'fuxi-cli-dir-'));
    try {
      const p = cliServerPaths({ XDG_RUNTIME_DIR: root });
      expect(p.dir).to.equal(join(root, `fuxi-cli-${process.getuid!()}`));
      expect(ensurePrivateDir(p.dir)).to.equal(undefined);
      chmodSync(p.dir, 0o755);
      expect(ensurePrivateDir(p.dir)).to.match(/open to other users \(mode 755\)/);
      rmSync(p.dir, { recursive: true });
      writeFileSync(p.dir, '');
      expect(ensurePrivateDir(p.dir)).to.match(/is not a folder/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('reads the build id a bundle carries', () => {
    expect(buildIdOf('#!/usr/bin/env node\nvar x = 1; /* fuxi-build 0123456789abcdef */\n')).to.equal('0123456789abcdef');
    expect(buildIdOf('no id here')).to.equal(undefined);
    expect(buildIdOf(readFileSync(BUNDLE, 'latin1').slice(0, 512))).to.match(/^[0-9a-f]{16}$/);
  });
});

describe('fuxi cli-server: the bundled bin with FUXI_CLI_SERVER=1', function () {
  this.timeout(90_000);
  let dir: string;
  let runtime: string;
  let master: FakeMaster;
  const servers = new Set<number>();
  let paths: ReturnType<typeof cliServerPaths>;

  /** Runs the bin (`bin`, default the build's) in `cwd` with the server on. */
  function fuxi(args: string[], opts: { bin?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Result> {
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        [opts.bin ?? BIN, ...args],
        {
          cwd: opts.cwd ?? dir,
          env: {
            ...NO_FUXI_ENV,
            FUXI_RETRY_MS: '0',
            FUXI_INSECURE: '1',
            FUXI_MASTER: master.address,
            FUXI_CLI_SERVER: '1',
            FUXI_DEBUG: '1',
            XDG_RUNTIME_DIR: runtime,
            ...opts.env,
          },
          timeout: 60_000,
        },
        (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });
  }

  /** The pid of the server listening now (from its pid file), once it has started. */
  async function serverPid(): Promise<number> {
    await until('the CLI server to listen', () => existsSync(paths.pidFile) && existsSync(paths.socket));
    const pid = Number(readFileSync(paths.pidFile, 'utf8'));
    servers.add(pid);
    return pid;
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fuxi-cli-server-'));
    runtime = join(dir, 'run');
    mkdirSync(runtime, { mode: 0o700 });
    paths = cliServerPaths({ XDG_RUNTIME_DIR: runtime });
    mkdirSync(join(dir, 'specs', 'data'), { recursive: true });
    writeFileSync(
      join(dir, 'specs', 'job.yaml'),
      'name: t\ntasks:\n  - name: t\n    instances: 1\n    resources: { cpu: 0.1, memory: 16Mi }\n    command: ["/bin/true"]\n    cwd: data\n',
    );
    master = await new FakeMaster().start();
  });

  after(async () => {
    for (const pid of servers) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await master?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the first command runs in its process and starts the server; the next ones are run by it, in their own folder', async () => {
    const first = await fuxi(['submit', 'specs/job.yaml', '--id', 'first']);
    expect([first.code, first.stdout]).to.deep.equal([0, 'first\n']);
    expect(first.stderr).to.include('no CLI server');
    const pid = await serverPid();
    // From another folder, a relative spec path: the server reads it where the caller is.
    const second = await fuxi(['submit', 'job.yaml', '--id', 'second'], { cwd: join(dir, 'specs') });
    expect([second.code, second.stdout, second.stderr]).to.deep.equal([0, 'second\n', 'fuxi: ran by the CLI server\n']);
    // The task's relative cwd is resolved against the spec's folder, as in the process.
    expect(master.specs.get('second')?.tasks[0]?.command.cwd).to.equal(join(dir, 'specs', 'data'));
    expect(master.specs.get('first')?.tasks[0]?.command.cwd).to.equal(join(dir, 'specs', 'data'));
    // Errors and exit codes come back as the process would have printed them.
    const missing = await fuxi(['status', 'nope']);
    expect(missing.code).to.equal(3);
    expect(missing.stderr).to.equal('error: job "nope" not found\nfuxi: ran by the CLI server\n');
    const json = await fuxi(['-o', 'json', 'status', 'second']);
    expect(json.code, json.stderr).to.equal(0);
    expect((JSON.parse(json.stdout) as { jobId: string }).jobId).to.equal('second');
    // The caller's own settings: a master that is not there is its error, not the server's.
    const away = await fuxi(['status', 'second'], { env: { FUXI_MASTER: '127.0.0.1:1' } });
    expect(away.code).to.equal(4);
    expect(away.stderr).to.match(/^error: master unavailable \(127\.0\.0\.1:1\)/);
    // Commands it does not serve run in the process, with the server still there.
    const waited = await fuxi(['--version']);
    expect([waited.code, waited.stderr]).to.deep.equal([0, '']);
    expect(alive(pid)).to.equal(true);
  });

  it('a caller of another build stops it and runs its command itself; the new server is of its build', async () => {
    const old = await serverPid();
    const other = join(dir, 'other');
    mkdirSync(other);
    copyFileSync(BIN, join(other, 'fuxi.cjs'));
    copyFileSync(join(clientDir, 'dist', 'fuxi-fast.cjs'), join(other, 'fuxi-fast.cjs'));
    const text = readFileSync(BUNDLE, 'latin1');
    const id = buildIdOf(text.slice(0, 512))!;
    writeFileSync(join(other, 'fuxi.bundle.cjs'), text.replace(`/* fuxi-build ${id} */`, `/* fuxi-build ${'f'.repeat(16)} */`), 'latin1');
    const r = await fuxi(['submit', join(dir, 'specs', 'job.yaml'), '--id', 'upgraded'], { bin: join(other, 'fuxi.cjs') });
    expect([r.code, r.stdout]).to.deep.equal([0, 'upgraded\n']);
    expect(r.stderr).to.include('the CLI server runs another build');
    await until('the old server to end', () => !alive(old));
    const next = await serverPid();
    expect(next).to.not.equal(old);
    expect(readFileSync(`/proc/${next}/cmdline`, 'utf8')).to.include(join(other, 'fuxi.cjs'));
    process.kill(next, 'SIGTERM');
    await until(
      'the server to end on SIGTERM, removing its socket and pid file',
      () => !alive(next) && !existsSync(paths.socket) && !existsSync(paths.pidFile),
    );
    // What it said of itself went to server.log, beside the socket.
    expect(readFileSync(paths.log, 'utf8')).to.equal(`fuxi cli-server ${next}: stopping (SIGTERM) after 0 commands\n`);
  });

  it('a stopped server (SIGSTOP) does not hold commands: they run in their process; continued, it serves again', async () => {
    await fuxi(['status', 'first']);
    const pid = await serverPid();
    const submits = () => master.calls.filter((c) => c === 'SubmitJob').length;
    process.kill(pid, 'SIGSTOP');
    let n: number;
    try {
      const r = await fuxi(['submit', join(dir, 'specs', 'job.yaml'), '--id', 'while-stopped']);
      expect([r.code, r.stdout]).to.deep.equal([0, 'while-stopped\n']);
      expect(r.stderr).to.include('the CLI server did not answer within 2000 ms; running the command here');
      n = submits();
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const again = await fuxi(['status', 'while-stopped']);
    expect([again.code, again.stderr]).to.deep.equal([0, 'fuxi: ran by the CLI server\n']);
    // The stopped server never had the request: the job was submitted once.
    expect(submits()).to.equal(n);
    process.kill(pid, 'SIGTERM');
    await until('the server to end', () => !alive(pid) && !existsSync(paths.socket));
  });

  it('ends after FUXI_CLI_SERVER_IDLE_S without a request', async () => {
    await fuxi(['status', 'first'], { env: { FUXI_CLI_SERVER_IDLE_S: '1' } });
    const pid = await serverPid();
    const served = await fuxi(['status', 'first']);
    expect(served.stderr).to.include('ran by the CLI server');
    await until('the idle server to end', () => !alive(pid) && !existsSync(paths.socket));
  });

  it('never uses a folder others can enter: the command runs in the process, no server starts', async () => {
    mkdirSync(paths.dir, { recursive: true });
    chmodSync(paths.dir, 0o755);
    try {
      const r = await fuxi(['status', 'first']);
      expect(r.code).to.equal(0);
      expect(r.stderr).to.match(/not using a CLI server: .* is open to other users \(mode 755\)/);
      await sleep(500);
      expect(existsSync(paths.socket)).to.equal(false);
    } finally {
      chmodSync(paths.dir, 0o700);
    }
  });

  it('a server that drops the request is an error (exit 5): the command is not run a second time', async () => {
    const fake = createServer({ allowHalfOpen: true }, (s) => {
      s.write('{"hello":1}\n');
      s.on('data', () => s.destroy());
    });
    await new Promise<void>((r) => fake.listen(paths.socket, r));
    try {
      const r = await fuxi(['submit', join(dir, 'specs', 'job.yaml'), '--id', 'dropped']);
      expect(r.code).to.equal(5);
      expect(r.stderr).to.include('ended before it answered; the command may or may not have run');
      expect(master.jobs.has('dropped')).to.equal(false);
    } finally {
      await new Promise((r) => fake.close(r));
    }
  });
});
