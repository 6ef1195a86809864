import { expect } from 'chai';
import { createProgress, finalLine, LineProgress, progressSummary, stateChangeLine, taskSummary } from '../cli/progress.js';
import { Capture, mockJob, mockProgress } from './helpers.js';

describe('cli progress', () => {
  const running = mockJob({
    tasks: [
      mockProgress('map', { total: 10, succeeded: 10 }),
      mockProgress('reduce', { total: 10, succeeded: 2, running: 5, failed: 1, retries: 2, reexecutions: 1 }),
    ],
  });

  it('summarizes progress, leaving out zero counts', () => {
    expect(progressSummary(running)).to.equal('RUNNING 12/20 succeeded, 5 running, 1 failed, 2 retries, 1 re-executions');
    expect(progressSummary(mockJob({ state: 'JOB_STATE_SUBMITTED' }))).to.equal('SUBMITTED 0/0 succeeded');
    expect(taskSummary(running)).to.equal('map 10/10, reduce 2/10');
  });

  it('formats state-change and final lines', () => {
    expect(stateChangeLine(running)).to.equal('job wc-1: RUNNING 12/20 succeeded, 5 running, 1 failed, 2 retries, 1 re-executions [map 10/10, reduce 2/10]');
    expect(stateChangeLine(mockJob({ state: 'JOB_STATE_SUBMITTED' }))).to.equal('job wc-1: SUBMITTED 0/0 succeeded');
    expect(finalLine(mockJob({ state: 'JOB_STATE_SUCCEEDED' }))).to.equal('job wc-1 SUCCEEDED');
    expect(finalLine(mockJob({ state: 'JOB_STATE_KILLED', message: 'killed by alice: oops' }))).to.equal('job wc-1 KILLED: killed by alice: oops');
  });

  it('prints one line per state change without a TTY', () => {
    const out = new Capture(false);
    const p = createProgress(out);
    expect(p).to.be.instanceOf(LineProgress);
    p.update(mockJob({ state: 'JOB_STATE_SUBMITTED' }));
    p.update(mockJob({ state: 'JOB_STATE_RUNNING' }));
    p.update(running);
    p.update(mockJob({ state: 'JOB_STATE_SUCCEEDED' }));
    p.stop();
    expect(out.text.split('\n')).to.deep.equal([
      'job wc-1: SUBMITTED 0/0 succeeded',
      'job wc-1: RUNNING 0/0 succeeded',
      'job wc-1: SUCCEEDED 0/0 succeeded',
      '',
    ]);
  });

  it('draws a bar on a TTY', () => {
    const out = Object.assign(new Capture(true), { columns: 120, cursorTo() {}, clearLine() {}, moveCursor() {} });
    const p = createProgress(out);
    expect(p).to.not.be.instanceOf(LineProgress);
    p.update(running);
    p.update(mockJob({ state: 'JOB_STATE_SUCCEEDED', tasks: [mockProgress('map', { total: 20, succeeded: 20 })] }));
    p.stop();
    expect(out.text).to.include('12/20 instances');
    expect(out.text).to.include('SUCCEEDED');
  });
});
