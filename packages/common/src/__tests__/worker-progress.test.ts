import { expect } from 'chai';
import { MAX_REPORTED_PATHS, parseProgressReport } from '../worker-progress.js';

describe('worker progress reports (the file a worker SDK writes and its agent reads)', () => {
  it('reads the fraction and the paths, clamping numbers and dropping malformed paths', () => {
    const text = JSON.stringify({
      fraction: 1.5,
      paths: [
        { srcNode: 'n3', srcWorker: 'map.2.1', bytes: 1024.7, elapsedMs: -5, done: true },
        { srcNode: '', bytes: 1 },
        'junk',
        { srcNode: 'n1', bytes: 'many' },
      ],
    });
    expect(parseProgressReport(text)).to.deep.equal({
      fraction: 1,
      paths: [
        { srcNode: 'n3', srcWorker: 'map.2.1', bytes: 1024, elapsedMs: 0, done: true },
        { srcNode: 'n1', srcWorker: '', bytes: 0, elapsedMs: 0, done: false },
      ],
    });
  });

  it('drops what is not a report, and keeps only the newest paths of a long list', () => {
    expect(parseProgressReport('{')).to.equal(undefined);
    expect(parseProgressReport('null')).to.equal(undefined);
    expect(parseProgressReport('{"fraction":"half"}')).to.deep.equal({ fraction: 0, paths: [] });
    const many = Array.from({ length: MAX_REPORTED_PATHS + 10 }, (_, i) => ({ srcNode: `n${i}`, bytes: i }));
    const r = parseProgressReport(JSON.stringify({ paths: many }))!;
    expect(r.paths).to.have.length(MAX_REPORTED_PATHS);
    expect(r.paths[0]!.srcNode).to.equal('n10');
  });
});
