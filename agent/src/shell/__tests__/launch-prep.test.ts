import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { LaunchPrepError, runLaunchPrep, type LaunchPrep } from '../launch-prep.js';

describe('launch-prep: a worker directory laid out before its start', () => {
  let root: string;
  let dir: string;

  beforeEach(() => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-prep-')));
    dir = path.join(root, 'apps', 'app1', 'w1');
  });

  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  function prep(over: Partial<LaunchPrep> = {}): LaunchPrep {
    return {
      dir,
      subdirs: [path.join(dir, 'out')],
      staleFiles: [path.join(dir, 'exit'), path.join(dir, 'pid')],
      files: [
        { path: path.join(dir, 'family'), text: 'marker\n' },
        { path: path.join(dir, 'cmd.json'), text: '{}\n' },
      ],
      cwd: { confine: { field: 'cwd', given: '', allowed: [] } },
      ...over,
    };
  }

  it('makes the directory with its parents, its subdirectories and files, and returns the resolved cwd', () => {
    expect(runLaunchPrep(prep())).to.equal(dir);
    expect(fs.statSync(path.join(dir, 'out')).isDirectory()).to.equal(true);
    expect(fs.readFileSync(path.join(dir, 'family'), 'utf8')).to.equal('marker\n');
    expect(fs.readFileSync(path.join(dir, 'cmd.json'), 'utf8')).to.equal('{}\n');
  });

  it("removes an earlier run's exit and pid files when the directory was there, and replaces its files", () => {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'exit'), '0\n');
    fs.writeFileSync(path.join(dir, 'pid'), '123\n');
    fs.writeFileSync(path.join(dir, 'family'), 'old\n');
    runLaunchPrep(prep());
    expect(fs.existsSync(path.join(dir, 'exit'))).to.equal(false);
    expect(fs.existsSync(path.join(dir, 'pid'))).to.equal(false);
    expect(fs.readFileSync(path.join(dir, 'family'), 'utf8')).to.equal('marker\n');
  });

  it('confines a job cwd to the directory and the allowed roots, naming the field when it is outside or missing', () => {
    const allowed = path.join(root, 'data');
    fs.mkdirSync(path.join(allowed, 'in'), { recursive: true });
    expect(runLaunchPrep(prep({ cwd: { confine: { field: 'cwd', given: path.join(allowed, 'in'), allowed: [allowed] } } }))).to.equal(path.join(allowed, 'in'));
    const refused = (given: string): LaunchPrepError => {
      try {
        runLaunchPrep(prep({ cwd: { confine: { field: 'cwd', given, allowed: [allowed] } } }));
      } catch (e) {
        return e as LaunchPrepError;
      }
      throw new Error(`${given} was not refused`);
    };
    const out = refused('../../../../..');
    expect([out.field, out.reason]).to.deep.equal(['cwd', `"../../../../.." resolves to /, outside the worker's directory and allowedPaths (${allowed})`]);
    expect(out.message).to.equal(`cwd: ${out.reason}`);
    expect(refused('nope').reason).to.equal('"nope" does not exist on this node');
  });

  it('refuses a working directory that is not a directory (no field: the path was not the job’s)', () => {
    fs.mkdirSync(root, { recursive: true });
    fs.writeFileSync(path.join(root, 'file'), '');
    let err: LaunchPrepError | undefined;
    try {
      runLaunchPrep(prep({ cwd: { path: path.join(root, 'file') } }));
    } catch (e) {
      err = e as LaunchPrepError;
    }
    expect(err?.message).to.equal(`working directory ${path.join(root, 'file')} does not exist`);
    expect(err?.field).to.equal('');
  });
  it('writes and gives nothing through what an earlier run of the worker left in its directory (symlinks, a FIFO)', () => {
    // The earlier run, as the worker's user, owned the directory: it left links to root's things.
    const victimFile = path.join(root, 'victim-file');
    const victimDir = path.join(root, 'victim-dir');
    fs.writeFileSync(victimFile, 'keep');
    fs.mkdirSync(victimDir, { mode: 0o755 });
    const before = fs.statSync(victimDir);
    fs.mkdirSync(dir, { recursive: true });
    fs.symlinkSync(victimFile, path.join(dir, 'cmd.json'));
    fs.symlinkSync(victimDir, path.join(dir, 'out'));
    execFileSync('mkfifo', [path.join(dir, 'family')]);
    const me = { uid: process.getuid!(), gid: process.getgid!() };
    runLaunchPrep(prep({ owner: { ...me, passThrough: [], give: [path.join(dir, 'out'), dir], chown: [] } }));
    expect(fs.readFileSync(victimFile, 'utf8')).to.equal('keep');
    expect(fs.statSync(victimDir).mode).to.equal(before.mode);
    for (const f of ['cmd.json', 'family']) expect(fs.lstatSync(path.join(dir, f)).isFile(), f).to.equal(true);
    expect(fs.lstatSync(path.join(dir, 'out')).isDirectory()).to.equal(true);
    expect(fs.statSync(path.join(dir, 'out')).mode & 0o777).to.equal(0o700);
  });

  it('leaves no directory behind when the launch is refused', () => {
    expect(() => runLaunchPrep(prep({ cwd: { confine: { field: 'cwd', given: '../../..', allowed: [] } } }))).to.throw(LaunchPrepError);
    expect(fs.existsSync(dir)).to.equal(false);
    // A directory that was there already (an earlier run's) stays.
    fs.mkdirSync(dir, { recursive: true });
    expect(() => runLaunchPrep(prep({ cwd: { confine: { field: 'cwd', given: '../../..', allowed: [] } } }))).to.throw(LaunchPrepError);
    expect(fs.existsSync(dir)).to.equal(true);
  });
});
