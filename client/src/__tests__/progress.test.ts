import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseProgressReport } from '@fuxi/common';
import { ProgressTracker } from '../sdk/progress.js';

describe('worker SDK progress (reportProgress, measured fetches)', () => {
  it('writes the fraction and every data path to the progress file, atomically', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-progress-'));
    try {
      let now = 1000;
      const file = path.join(dir, 'progress.json');
      const t = new ProgressTracker(file, () => now);
      t.report(0.25);
      const p = t.beginPath('n3', 'map.2.1');
      now = 1800;
      p.add(4096);
      now = 2000;
      p.end(true);
      const q = t.beginPath('n1', 'map.0.1');
      q.add(10);
      now = 2500;
      t.write();
      expect(parseProgressReport(fs.readFileSync(file, 'utf8'))).to.deep.equal({
        fraction: 0.25,
        paths: [
          { srcNode: 'n3', srcWorker: 'map.2.1', bytes: 4096, elapsedMs: 1000, done: true },
          { srcNode: 'n1', srcWorker: 'map.0.1', bytes: 10, elapsedMs: 500, done: false },
        ],
      });
      expect(fs.readdirSync(dir)).to.deep.equal(['progress.json']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes nothing outside a worker', () => {
    const t = new ProgressTracker(undefined);
    t.report(0.5);
    t.write();
    expect(t.snapshot()).to.deep.equal({ fraction: 0.5, paths: [] });
  });
});
