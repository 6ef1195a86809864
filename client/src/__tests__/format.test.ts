import { expect } from 'chai';
import { fmtResource, fmtTime, fmtUnreachable, formatJobList, formatJobStatus, formatNodes, renderTable, toJson, totals } from '../cli/format.js';
import { mockJob, mockNode, mockProgress } from './helpers.js';

describe('cli format', () => {
  it('renders aligned tables without trailing spaces', () => {
    expect(
      renderTable(
        ['A', 'LONG'],
        [
          ['xxx', '1'],
          ['y', '22'],
        ],
      ),
    ).to.equal('A    LONG\nxxx  1\ny    22');
    expect(renderTable(['A', 'B'], [['', '']])).to.equal('A  B\n');
  });

  it('formats resources and times', () => {
    expect(fmtResource({ cpuMilli: 500, memoryMb: 1024 })).to.equal('cpu=500m mem=1Gi');
    expect(fmtResource(null)).to.equal('-');
    expect(fmtTime('0')).to.equal('-');
    expect(fmtTime('1767225600000')).to.equal('2026-01-01T00:00:00Z');
  });

  it('sums task progress', () => {
    const t = totals([
      mockProgress('a', { total: 3, succeeded: 1, running: 2, retries: 1, progress: 0.5, backups: 1 }),
      mockProgress('b', { total: 2, pending: 2, failed: 1, reexecutions: 2, progress: 0.25 }),
    ]);
    expect(t).to.deep.equal({ total: 5, pending: 2, running: 2, succeeded: 1, failed: 1, retries: 1, reexecutions: 2, progress: 0.4, backups: 1 });
  });

  it('formats a job status with a task table', () => {
    const job = mockJob({
      state: 'JOB_STATE_FAILED',
      message: 'task map instance 3 failed 3 times',
      tasks: [
        mockProgress('map', { total: 20, pending: 5, running: 10, succeeded: 5, retries: 1, progress: 0.4, backups: 2 }),
        mockProgress('reduce', { total: 4, pending: 4, reexecutions: 1 }),
      ],
    });
    const text = formatJobStatus(job);
    expect(text).to.include('job:        wc-1');
    expect(text).to.include('state:      FAILED');
    expect(text).to.include('owner:      alice');
    expect(text).to.include('message:    task map instance 3 failed 3 times');
    expect(text).to.include('AM node:    n1 (127.0.0.1:7071), attempt 1');
    expect(text).to.include('submitted:  2026-01-01T00:00:00Z');
    const table = text.split('\n\n')[1];
    expect(table).to.equal(
      [
        'TASK    PROGRESS  TOTAL  PENDING  RUNNING  SUCCEEDED  FAILED  RETRIES  REEXECUTIONS  BACKUPS',
        'map     40%       20     5        10       5          0       1        0             2',
        'reduce  0%        4      4        0        0          0       0        1             0',
      ].join('\n'),
    );
  });

  it('formats a job without an AM or progress yet', () => {
    const text = formatJobStatus(mockJob({ state: 'JOB_STATE_SUBMITTED', amNodeId: '', amAddress: '' }));
    expect(text).to.include('AM node:    -');
    expect(text).to.include('(no task progress reported yet)');
    expect(text).to.not.include('message:');
  });

  it('formats a job list', () => {
    const jobs = [
      mockJob({ tasks: [mockProgress('m', { total: 4, succeeded: 1 })] }),
      mockJob({ jobId: 'other-2', name: 'x', state: 'JOB_STATE_SUCCEEDED', submittedAtMs: '0', owner: '' }),
    ];
    const lines = formatJobList(jobs).split('\n');
    expect(lines[0]).to.match(/^JOB\s+NAME\s+STATE\s+OWNER\s+QUOTA\s+PRIORITY\s+SUCCEEDED\s+SUBMITTED$/);
    expect(lines[1]).to.match(/^wc-1\s+wordcount\s+RUNNING\s+alice\s+default\s+0\s+1\/4\s+2026-01-01T00:00:00Z$/);
    expect(lines[2]).to.match(/^other-2\s+x\s+SUCCEEDED\s+-\s+default\s+0\s+0\/0\s+-$/);
    expect(formatJobList([])).to.equal('(no jobs)');
  });

  it('formats nodes', () => {
    const lines = formatNodes([
      mockNode('n1', '10.0.0.1:7071'),
      mockNode('n2', '10.0.0.2:7071', { healthy: true, state: 'timing out', runningWorkers: 0 }),
      mockNode('n3', '10.0.0.3:7071', { healthy: false, state: 'lost', runningWorkers: 0 }),
    ]).split('\n');
    expect(lines[0]).to.match(/^NODE\s+ADDRESS\s+RACK\s+STATE\s+CAPACITY\s+ALLOCATED\s+FREE\s+WORKERS\s+LIMITS\s+RUNS-AS\s+PREDICTION\s+UNREACHABLE$/);
    expect(lines[1]).to.match(
      /^n1\s+10\.0\.0\.1:7071\s+r1\s+ready\s+cpu=8 mem=16Gi\s+cpu=500m mem=512Mi\s+cpu=7500m mem=15872Mi\s+1\s+cgroup-v1\s+nobody\s+-\s+-$/,
    );
    expect(lines[2]).to.match(/\stiming out\s/);
    expect(lines[3]).to.match(/\slost\s/);
    expect(formatNodes([])).to.equal('(no nodes)');
  });

  it('shows cordoned, draining and drained nodes with who, when and why', () => {
    const admin = (state: string, over = {}) => ({
      state,
      reason: 'maintenance',
      by: 'alice',
      sinceMs: '1700000000000',
      deadlineMs: '0',
      drained: false,
      ...over,
    });
    const lines = formatNodes([
      mockNode('n1', '10.0.0.1:7071', { state: 'cordoned', admin: admin('cordoned') }),
      mockNode('n2', '10.0.0.2:7071', { state: 'draining', admin: admin('draining', { deadlineMs: '1700000060000' }) }),
      mockNode('n3', '10.0.0.3:7071', { state: 'cordoned', admin: admin('cordoned', { drained: true }) }),
      mockNode('n4', '10.0.0.4:7071', { state: 'timing out', admin: admin('cordoned') }),
      mockNode('n5', '10.0.0.5:7071'),
    ]).split('\n');
    expect(lines[0]).to.match(/\sUNREACHABLE\s+BY\s+SINCE\s+REASON$/);
    expect(lines[1]).to.match(/^n1\s.*\scordoned\s.*\salice\s+2023-11-14T22:13:20Z\s+maintenance$/);
    expect(lines[2]).to.match(/\sdraining until 2023-11-14T22:14:20Z\s/);
    expect(lines[3]).to.match(/\scordoned \(drained\)\s/);
    expect(lines[4]).to.match(/\stiming out, cordoned\s/);
    expect(lines[5]).to.match(/^n5\s.*\sready\s.*\s-\s+-\s+-$/);
  });

  it('shows what failure prediction says of a host, and why below the table', () => {
    const lines = formatNodes([
      mockNode('n1', '10.0.0.1:7071', { prediction: 'blocked', predictionReason: 'predicted 0.62: 7 of 9 attempts failed, 2 flaps in 30 min' }),
      mockNode('n2', '10.0.0.2:7071', { prediction: 'job', predictionJobs: ['job-a', 'job-b'] }),
      mockNode('n3', '10.0.0.3:7071'),
    ]).split('\n');
    expect(lines[1]).to.match(/\s1\s+cgroup-v1\s+nobody\s+blocked\s+-$/);
    expect(lines[2]).to.match(/\s1\s+cgroup-v1\s+nobody\s+job:2\s+-$/);
    expect(lines[3]).to.match(/\s1\s+cgroup-v1\s+nobody\s+-\s+-$/);
    expect(lines.slice(4)).to.deep.equal([
      'failure prediction:',
      '  n1: blocked, predicted 0.62: 7 of 9 attempts failed, 2 flaps in 30 min',
      '  n2: job (blocked for job-a, job-b)',
    ]);
  });

  it('names the peers a node cannot reach (a partial partition) in the last column', () => {
    const lines = formatNodes([
      mockNode('a1', '10.0.0.1:7071', { unreachablePeers: ['a2'] }),
      mockNode('a2', '10.0.0.2:7071', { unreachablePeers: ['a1'], state: 'partitioned' }),
      mockNode('a3', '10.0.0.3:7071', { unreachablePeers: ['a4', 'a5', 'a6', 'a7', 'a8'] }),
      mockNode('a4', '10.0.0.4:7071'),
    ]).split('\n');
    expect(lines).to.have.length(5);
    expect(lines[1]).to.match(/\s1\s+cgroup-v1\s+nobody\s+-\s+a2$/);
    expect(lines[2]).to.match(/\spartitioned\s.*\sa1$/);
    expect(lines[3]).to.match(/\sa4,a5,a6 \+2$/);
    expect(lines[4]).to.match(/\s1\s+cgroup-v1\s+nobody\s+-\s+-$/);
    // The other columns keep their widths: the last column never pads.
    expect(lines.slice(1).map((l) => l.indexOf('cpu=8'))).to.satisfy((xs: number[]) => new Set(xs).size === 1);
    expect(fmtUnreachable([])).to.equal('-');
    expect(fmtUnreachable(undefined)).to.equal('-');
    expect(fmtUnreachable(['x', 'y', 'z'])).to.equal('x,y,z');
  });

  it('prints JSON with Buffers as base64', () => {
    expect(JSON.parse(toJson({ a: 1, b: Buffer.from('hi') }))).to.deep.equal({ a: 1, b: 'aGk=' });
    expect(toJson({ a: 1 })).to.equal('{\n  "a": 1\n}');
  });
});
