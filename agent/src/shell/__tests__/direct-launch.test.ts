import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CgroupHomes, parsePidRecord, pidRecord, shellExitCode, startDirect } from '../direct-launch.js';
import { readRegular, writeFresh } from '../worker-files.js';
import { waitFor } from './helpers.js';

const MOUNTS = [
  '25 24 0:22 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate',
  '26 24 0:23 / /sys/fs/cgroup/systemd rw,nosuid - cgroup cgroup rw,xattr,name=systemd',
  '30 24 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct',
  '31 24 0:28 /docker/abc /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory',
  '22 1 0:20 / /proc rw - proc proc rw',
].join('\n');

const OWN = [
  '0::/system.slice/fuxi-agent.service',
  '1:name=systemd:/system.slice/fuxi-agent.service',
  '4:cpu,cpuacct:/system.slice',
  '7:memory:/docker/abc/agent',
].join('\n');

describe('direct-launch: the records a wrapper used to write', () => {
  it('records an exit as sh does: the code, or 128 + the signal number', () => {
    expect(shellExitCode(0, null)).to.equal(0);
    expect(shellExitCode(3, null)).to.equal(3);
    expect(shellExitCode(null, 'SIGKILL')).to.equal(137);
    expect(shellExitCode(null, 'SIGTERM')).to.equal(143);
    expect(shellExitCode(null, null)).to.equal(255);
  });

  it('a pid file holds the pid and its start time; the wrapper wrote the pid alone', () => {
    expect(parsePidRecord(pidRecord(42, '12345'))).to.deep.equal({ pid: 42, startTime: '12345' });
    expect(parsePidRecord('42\n')).to.deep.equal({ pid: 42, startTime: '' });
    expect(parsePidRecord('')).to.deep.equal({ pid: 0, startTime: '' });
    expect(parsePidRecord('x 1')).to.deep.equal({ pid: 0, startTime: '' });
    expect(parsePidRecord('42 y')).to.deep.equal({ pid: 42, startTime: '' });
  });

  it('never writes or reads through a symlink, nor opens a FIFO (the directory is the worker user’s; the helper may be root)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-direct-'));
    try {
      const victim = path.join(dir, 'victim');
      fs.writeFileSync(victim, 'keep');
      fs.symlinkSync(victim, path.join(dir, 'exit'));
      expect(readRegular(path.join(dir, 'exit'))).to.equal(undefined);
      // The link is replaced by the file; its target is untouched.
      writeFresh(path.join(dir, 'exit'), '0\n');
      expect(fs.readFileSync(victim, 'utf8')).to.equal('keep');
      expect(fs.lstatSync(path.join(dir, 'exit')).isFile()).to.equal(true);
      expect(readRegular(path.join(dir, 'exit'))).to.equal('0\n');
      writeFresh(path.join(dir, 'pid'), '1\n');
      writeFresh(path.join(dir, 'pid'), '2\n');
      expect(fs.readFileSync(path.join(dir, 'pid'), 'utf8')).to.equal('2\n');
      // A FIFO where a file goes (no reader: an open for writing would block for good).
      execFileSync('mkfifo', [path.join(dir, 'fifo')]);
      expect(readRegular(path.join(dir, 'fifo'))).to.equal(undefined);
      writeFresh(path.join(dir, 'fifo'), '3\n');
      expect(readRegular(path.join(dir, 'fifo'))).to.equal('3\n');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('direct-launch: the groups the helper goes back to', () => {
  it('maps each worker group to the group this process is in on the same hierarchy (v1, a mount root, v2)', () => {
    const homes = new CgroupHomes({ mountInfo: () => MOUNTS, ownGroups: () => OWN });
    expect(
      homes.homesFor([
        '/sys/fs/cgroup/memory/agent/fuxi-n1/app/w/cgroup.procs',
        '/sys/fs/cgroup/cpu,cpuacct/system.slice/fuxi-n1/app/w/cgroup.procs',
        '/sys/fs/cgroup/unified/system.slice/fuxi-n1/app/w/cgroup.procs',
      ]),
    ).to.deep.equal([
      '/sys/fs/cgroup/memory/agent/cgroup.procs',
      '/sys/fs/cgroup/cpu,cpuacct/system.slice/cgroup.procs',
      '/sys/fs/cgroup/unified/system.slice/fuxi-agent.service/cgroup.procs',
    ]);
    expect(() => homes.homesFor(['/elsewhere/cgroup.procs'])).to.throw(/no cgroup hierarchy/);
  });
});

describe('direct-launch: startDirect (real processes)', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-direct-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('runs the command with its output in the worker files, then records its pid and exit code', async () => {
    const ends: Array<[number, number | null, string | null]> = [];
    const started = startDirect(
      { argv: ['sh', '-c', 'echo out; echo err >&2; exit 9'], dir, procs: [] },
      { cwd: dir, env: { PATH: process.env.PATH ?? '' } },
      new CgroupHomes(),
      (...e) => ends.push(e),
    );
    expect(started?.pid).to.be.a('number');
    expect(parsePidRecord(fs.readFileSync(path.join(dir, 'pid'), 'utf8'))).to.deep.equal({ pid: started?.pid, startTime: started?.startTime });
    await waitFor(() => ends.length > 0);
    expect(ends[0]).to.deep.equal([started?.pid, 9, null]);
    expect(fs.readFileSync(path.join(dir, 'exit'), 'utf8')).to.equal('9\n');
    expect(fs.readFileSync(path.join(dir, 'stdout'), 'utf8')).to.equal('out\n');
    expect(fs.readFileSync(path.join(dir, 'stderr'), 'utf8')).to.equal('err\n');
  });

  it('gives up, leaving nothing running, when the command cannot be exec’d or a group cannot be joined (the wrapper then says why)', () => {
    const env = { PATH: process.env.PATH ?? '' };
    const never = () => expect.fail('no process, no exit');
    expect(startDirect({ argv: ['/nonexistent/fuxi-x'], dir, procs: [] }, { cwd: dir, env }, new CgroupHomes(), never)).to.equal(undefined);
    const notExecutable = path.join(dir, 'data');
    fs.writeFileSync(notExecutable, 'exit 0\n', { mode: 0o644 });
    expect(startDirect({ argv: [notExecutable], dir, procs: [] }, { cwd: dir, env }, new CgroupHomes(), never)).to.equal(undefined);
    expect(startDirect({ argv: ['true'], dir, procs: [path.join(dir, 'nope', 'cgroup.procs')] }, { cwd: dir, env }, new CgroupHomes(), never)).to.equal(
      undefined,
    );
    expect(fs.existsSync(path.join(dir, 'pid'))).to.equal(false);
  });
});
