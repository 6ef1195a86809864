import { expect } from 'chai';
import { diskOverThreshold, selectWorkDirsToDelete, type WorkDirEntry, type WorkDirPolicy } from '../workdir-retention.js';

const H = 3_600_000;
const GB = 1024 ** 3;
const POLICY: WorkDirPolicy = { retentionMs: 24 * H, maxDiskPercent: 90 };
const NOW = 100 * H;

function dir(appId: string, workerId: string, finishedHoursAgo: number | 'running' | 'unknown', bytes = 0): WorkDirEntry {
  if (finishedHoursAgo === 'running') return { appId, workerId, running: true, finishedAtMs: undefined, bytes };
  if (finishedHoursAgo === 'unknown') return { appId, workerId, running: false, finishedAtMs: undefined, bytes };
  return { appId, workerId, running: false, finishedAtMs: NOW - finishedHoursAgo * H, bytes };
}

const lowDisk = { totalBytes: 100 * GB, usedBytes: 10 * GB };
const ids = (ds: Array<{ appId: string; workerId: string }>) => ds.map((d) => `${d.appId}/${d.workerId}`);

describe('work dir retention (core)', () => {
  it('deletes finished directories past retention of apps no longer active, oldest first', () => {
    const dirs = [dir('a', 'map.0.1', 30), dir('a', 'map.1.1', 48), dir('b', 'map.0.1', 23.9), dir('c', 'am.1', 24)];
    const out = selectWorkDirsToDelete({ dirs, activeApps: new Set(), disk: lowDisk, now: NOW }, POLICY);
    expect(out).to.deep.equal([
      { appId: 'a', workerId: 'map.1.1', reason: 'retention' },
      { appId: 'a', workerId: 'map.0.1', reason: 'retention' },
      { appId: 'c', workerId: 'am.1', reason: 'retention' },
    ]);
  });

  it('never deletes a running worker, nor one whose finish time is unknown', () => {
    const dirs = [dir('a', 'map.0.1', 'running', 50 * GB), dir('a', 'map.1.1', 'unknown', 40 * GB)];
    const full = { totalBytes: 100 * GB, usedBytes: 99 * GB };
    expect(selectWorkDirsToDelete({ dirs, activeApps: new Set(['a']), disk: full, now: NOW }, POLICY)).to.deep.equal([]);
  });

  it('keeps the finished directories of an app still active on the node (unread logs, served outputs)', () => {
    const dirs = [dir('a', 'map.0.1', 72), dir('a', 'reduce.0.1', 'running'), dir('b', 'map.0.1', 72)];
    const out = selectWorkDirsToDelete({ dirs, activeApps: new Set(['a']), disk: lowDisk, now: NOW }, POLICY);
    expect(ids(out)).to.deep.equal(['b/map.0.1']);
  });

  it('above the disk threshold deletes finished directories oldest first until back under it, active apps too', () => {
    const dirs = [
      dir('a', 'map.0.1', 1, 5 * GB),
      dir('a', 'map.1.1', 3, 5 * GB),
      dir('a', 'reduce.0.1', 'running', 30 * GB),
      dir('b', 'map.0.1', 2, 5 * GB),
      dir('b', 'map.1.1', 0.5, 5 * GB),
    ];
    // 96% used: one 5 GB directory leaves 91% (still above 90%), two 86%.
    const disk = { totalBytes: 100 * GB, usedBytes: 96 * GB };
    const out = selectWorkDirsToDelete({ dirs, activeApps: new Set(['a']), disk, now: NOW }, POLICY);
    expect(out).to.deep.equal([
      { appId: 'a', workerId: 'map.1.1', reason: 'disk' },
      { appId: 'b', workerId: 'map.0.1', reason: 'disk' },
    ]);
  });

  it('counts what retention deletes toward the disk threshold', () => {
    const dirs = [dir('x', 'm.0.1', 50, 10 * GB), dir('a', 'm.0.1', 1, 5 * GB)];
    const disk = { totalBytes: 100 * GB, usedBytes: 95 * GB };
    const out = selectWorkDirsToDelete({ dirs, activeApps: new Set(['a']), disk, now: NOW }, POLICY);
    expect(out).to.deep.equal([{ appId: 'x', workerId: 'm.0.1', reason: 'retention' }]);
  });

  it('deletes every finished directory when even that does not reach the threshold, never a running one', () => {
    const dirs = [dir('a', 'm.0.1', 1, GB), dir('a', 'm.1.1', 'running', 50 * GB), dir('b', 'm.0.1', 2, GB)];
    const disk = { totalBytes: 100 * GB, usedBytes: 99 * GB };
    const out = selectWorkDirsToDelete({ dirs, activeApps: new Set(['a']), disk, now: NOW }, POLICY);
    expect(ids(out)).to.deep.equal(['b/m.0.1', 'a/m.0.1']);
  });

  it('a threshold of 100% turns the disk rule off', () => {
    expect(diskOverThreshold({ totalBytes: 100, usedBytes: 100 }, { ...POLICY, maxDiskPercent: 100 })).to.equal(false);
    expect(diskOverThreshold({ totalBytes: 100, usedBytes: 91 }, POLICY)).to.equal(true);
    expect(diskOverThreshold({ totalBytes: 100, usedBytes: 90 }, POLICY)).to.equal(false);
    expect(diskOverThreshold({ totalBytes: 0, usedBytes: 0 }, POLICY)).to.equal(false);
  });
});
