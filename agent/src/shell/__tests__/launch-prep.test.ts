import { expect } from 'chai';
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
});
