import { expect } from 'chai';
import { res } from '@fuxi/common';
import { AttemptHistory, ENDED_JOB_KEEP_MS, FEATURE_COUNT } from '../attempt-history.js';
import type { AttemptEnd } from '../attempt-history.js';

function end(over: Partial<AttemptEnd> = {}): AttemptEnd {
  return {
    nodeId: 'n1',
    appId: 'j1',
    task: 'map',
    exitCode: 0,
    signal: '',
    durationMs: 1000,
    resource: res(1000, 1024),
    loadAtStart: 0.5,
    memAtStart: 0.5,
    ...over,
  };
}

describe('attempt history', () => {
  it('labels an attempt with the features its host showed when it started, not after', () => {
    const h = new AttemptHistory({ capacity: 100, taskFaultRate: 0.3, windowMs: 60_000, pressureAt: 0.75 });
    h.recordEnd(end({ exitCode: 1 }), 10_000);
    const s = h.recordEnd(end({ durationMs: 5000 }), 12_000); // started at 7,000: before the failure
    expect(s?.x).to.have.length(FEATURE_COUNT);
    expect(s?.x[0]).to.be.closeTo(0.1, 1e-9);
    expect(s?.y).to.equal(0);
    const later = h.features('n1', 'j1', 'map', 0.2, 0.3, 13_000);
    expect(later[0]).to.be.closeTo(1.1 / 3, 1e-9); // 1 failure of 2, smoothed
    expect(later[3]).to.equal(0.2);
    expect(later[4]).to.equal(0.3);
  });

  it('counts failures under memory pressure, by signal, flaps, and the task across hosts', () => {
    const h = new AttemptHistory({ capacity: 100, taskFaultRate: 0.3, windowMs: 60_000, pressureAt: 0.75 });
    h.recordEnd(end({ memAtStart: 0.9, exitCode: 137, signal: 'SIGKILL' }), 1000);
    h.recordEnd(end({ memAtStart: 0.2 }), 1000);
    h.recordEnd(end({ nodeId: 'n2', exitCode: 1 }), 1000);
    h.recordFlap('n1', 1500);
    const x = h.features('n1', 'j1', 'map', 0, 0, 2000);
    expect(x[1]).to.be.closeTo(1.1 / 2, 1e-9);
    expect(x[2]).to.equal(1);
    expect(x[5]).to.be.closeTo(2.1 / 4, 1e-9);
    expect(x[6]).to.equal(1);
  });

  it('counts a worker killed for memory past its grant (taskFault) for the task, not the host', () => {
    const h = new AttemptHistory({ capacity: 100, taskFaultRate: 0.3, windowMs: 60_000, pressureAt: 0.75 });
    for (let i = 0; i < 3; i++) h.recordEnd(end({ exitCode: 137, taskFault: true }), 1000 + i);
    h.recordEnd(end(), 1100);
    const x = h.features('n1', 'j1', 'map', 0, 0, 2000);
    expect(x[0]).to.be.closeTo(0.1 / 2, 1e-9); // the host: one attempt, none failed
    expect(x[5]).to.be.closeTo(3.1 / 5, 1e-9); // the task: 3 failures of 4
    expect(h.hostFailures('n1', 2000)).to.deep.equal({ failed: 0, attempts: 1, flaps: 0 });
  });

  it('forgets what is older than the window, keeps at most `capacity` samples, skips kills', () => {
    const h = new AttemptHistory({ capacity: 3, taskFaultRate: 0.3, windowMs: 10_000, pressureAt: 0.75 });
    for (let i = 0; i < 5; i++) h.recordEnd(end({ exitCode: 1 }), i);
    expect(h.recordEnd(end({ killed: true, exitCode: 1 }), 6)).to.equal(undefined);
    expect(h.size).to.equal(3);
    expect(h.takeNewCount()).to.equal(5);
    expect(h.takeNewCount()).to.equal(0);
    expect(h.features('n1', 'j1', 'map', 0, 0, 50_000)[0]).to.be.closeTo(0.1, 1e-9);
    h.prune(50_000);
    expect(h.hostFailures('n1', 50_000)).to.deep.equal({ failed: 0, attempts: 0, flaps: 0 });
  });

  it("does not hold a task's own failures (it fails on several hosts) against the host", () => {
    const h = new AttemptHistory({ capacity: 100, taskFaultRate: 0.3, windowMs: 60_000, pressureAt: 0.75 });
    // The buggy task fails on n2 and n3, and on half of its attempts elsewhere.
    for (const nodeId of ['n2', 'n3', 'n4', 'n5']) h.recordEnd(end({ nodeId, task: 'buggy', exitCode: nodeId < 'n4' ? 1 : 0 }), 1000);
    const s = h.recordEnd(end({ nodeId: 'n1', task: 'buggy', exitCode: 1 }), 2000);
    expect(s?.y).to.equal(1);
    expect(s?.hostFault).to.equal(false);
    expect(h.hostFailures('n1', 2000)).to.deep.equal({ failed: 0, attempts: 0, flaps: 0 });
    // Another task failing on n1 (its only failure anywhere) is the host's.
    const other = h.recordEnd(end({ nodeId: 'n1', task: 'map', exitCode: 1 }), 2000);
    expect(other?.hostFault).to.equal(true);
    expect(h.hostFailures('n1', 2000).failed).to.equal(1);
  });

  it("counts a host's attempts under memory pressure at their start apart from the others", () => {
    const h = new AttemptHistory({ capacity: 100, taskFaultRate: 0.3, windowMs: 60_000, pressureAt: 0.75 });
    h.recordEnd(end({ memAtStart: 0.8, exitCode: 1 }), 1000);
    h.recordEnd(end({ memAtStart: 0.9, exitCode: 1, appId: 'j2' }), 1000);
    h.recordEnd(end({ memAtStart: 0.8 }), 1000);
    h.recordEnd(end({ memAtStart: 0.3 }), 1000);
    expect(h.hostPressure('n1', 1000)).to.deep.equal({ pressured: 3, pressuredFailed: 2, calm: 1, calmFailed: 0 });
  });

  it("keeps an ended job's task windows for late ends, then drops them", () => {
    const h = new AttemptHistory({ capacity: 100, taskFaultRate: 0.3, windowMs: 30 * 60_000, pressureAt: 0.75 });
    h.recordEnd(end({ nodeId: 'n2', exitCode: 1 }), 1000);
    h.forgetJob('j1', 2000);
    // The job's last attempt, reported after its end, still sees the failure before it.
    const late = h.recordEnd(end({ jobEnded: true, durationMs: 100 }), 3000);
    expect(late?.x[5]).to.be.closeTo(1.1 / 2, 1e-9);
    expect(h.jobsTracked).to.equal(1);
    h.sweepEnded(2000 + ENDED_JOB_KEEP_MS - 1);
    expect(h.jobsTracked).to.equal(1);
    h.sweepEnded(2000 + ENDED_JOB_KEEP_MS);
    expect(h.jobsTracked).to.equal(0);
    expect(h.features('n1', 'j1', 'map', 0.5, 0.5, 2000 + ENDED_JOB_KEEP_MS)[5]).to.be.closeTo(0.1, 1e-9);
    // Its hosts' history and its training samples stay.
    expect(h.hostFailures('n2', 3000).failed).to.equal(1);
    expect(h.size).to.equal(2);
  });

  it('makes no task window for an end reported after its job ended: many short jobs leave none behind', () => {
    const h = new AttemptHistory({ capacity: 20_000, taskFaultRate: 0.3, windowMs: 30 * 60_000, pressureAt: 0.75 });
    for (let i = 0; i < 10_000; i++) {
      h.forgetJob(`j${i}`, i); // the AM finished the job first...
      h.recordEnd(end({ appId: `j${i}`, jobEnded: true }), i + 1); // ...the agent's heartbeat told of its worker after
    }
    expect(h.jobsTracked).to.equal(0);
    expect(h.size).to.equal(10_000);
    // Jobs whose ends came while they ran are dropped once their keep has passed, pruned or not.
    for (let i = 0; i < 10_000; i++) {
      h.recordEnd(end({ appId: `k${i}` }), 20_000 + i);
      h.forgetJob(`k${i}`, 20_000 + i);
    }
    expect(h.jobsTracked).to.equal(10_000);
    h.sweepEnded(20_000 + 4_999 + ENDED_JOB_KEEP_MS);
    expect(h.jobsTracked).to.equal(5_000);
    h.sweepEnded(30_000 + ENDED_JOB_KEEP_MS);
    expect(h.jobsTracked).to.equal(0);
  });
});
