import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readExitFile, readFamilyFile, readPidRecord } from '../process-driver.js';
import { openRegular, readRegularAsync, realDir } from '../worker-files.js';

describe("worker-files: a worker's directory read and written by root", () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-wfiles-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("reads a regular file only: never a symlink's target (root's file), never a FIFO (an open that blocks for good)", async () => {
    const secret = path.join(dir, 'secret');
    fs.writeFileSync(secret, 'root only');
    fs.writeFileSync(path.join(dir, 'stdout'), 'log line\n');
    fs.symlinkSync(secret, path.join(dir, 'stderr'));
    execFileSync('mkfifo', [path.join(dir, 'progress')]);
    expect(await readRegularAsync(path.join(dir, 'stdout'))).to.equal('log line\n');
    expect(await readRegularAsync(path.join(dir, 'stderr'))).to.equal(undefined);
    expect(await readRegularAsync(path.join(dir, 'progress'))).to.equal(undefined);
    expect(await readRegularAsync(path.join(dir, 'none'))).to.equal(undefined);
    for (const f of ['stderr', 'progress']) {
      const err = (await openRegular(path.join(dir, f)).catch((e: unknown) => e)) as Error;
      expect(err, f).to.be.instanceOf(Error);
    }
    const fh = await openRegular(path.join(dir, 'stdout'));
    await fh.close();
  });

  it("the agent's reads of a worker's exit, pid and cmd.json return at once when they are FIFOs or symlinks", () => {
    fs.writeFileSync(path.join(dir, 'secret'), '7\n');
    for (const f of ['exit', 'pid', 'cmd.json']) execFileSync('mkfifo', [path.join(dir, f)]);
    expect(readExitFile(dir)).to.equal(null);
    expect(readPidRecord(dir)).to.deep.equal({ pid: 0, startTime: '' });
    expect(readFamilyFile(dir)).to.equal('');
    for (const f of ['exit', 'pid']) {
      fs.rmSync(path.join(dir, f));
      fs.symlinkSync(path.join(dir, 'secret'), path.join(dir, f));
    }
    expect(readExitFile(dir)).to.equal(null);
    expect(readPidRecord(dir).pid).to.equal(0);
  });

  it('realDir replaces a symlink or a file where a directory goes, and keeps a directory', () => {
    const target = path.join(dir, 'target');
    fs.mkdirSync(target);
    fs.writeFileSync(path.join(target, 'keep'), '');
    fs.symlinkSync(target, path.join(dir, 'out'));
    realDir(path.join(dir, 'out'));
    expect(fs.lstatSync(path.join(dir, 'out')).isDirectory()).to.equal(true);
    expect(fs.existsSync(path.join(target, 'keep'))).to.equal(true);
    fs.writeFileSync(path.join(dir, 'out', 'mine'), '');
    realDir(path.join(dir, 'out'));
    expect(fs.existsSync(path.join(dir, 'out', 'mine'))).to.equal(true);
  });
});
