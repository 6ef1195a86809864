import { expect } from 'chai';
import { res, type SnapshotEntry } from '@fuxi/common';
import {
  dashboardRoute,
  fingerprint,
  instanceRows,
  jobRow,
  jobRows,
  MAX_JOB_ROWS,
  nodeRows,
  parseJobFilter,
  parseWorkerId,
  summaryView,
  type WorkerReport,
} from '../dashboard-view.js';
import type { ClusterStatusView, JobRecord, NodeView } from '../types.js';
import { Harness, mockNodeInfo, mockSpec } from './core-factories.js';

function mockJob(over: Partial<JobRecord> & { name?: string } = {}): JobRecord {
  const { name, ...rest } = over;
  const spec = mockSpec({ id: over.jobId ?? 'job-1', ...(name !== undefined ? { name } : {}) });
  return {
    jobId: spec.jobId,
    spec,
    state: 'running',
    message: '',
    submittedAtMs: 1000,
    finishedAtMs: 0,
    submitSeq: 1,
    amAttempt: 1,
    amNodeId: 'n1',
    amAddress: 'n1:9000',
    progress: [],
    ...rest,
  };
}

function mockNodeView(over: Partial<NodeView> = {}): NodeView {
  return {
    info: mockNodeInfo(),
    healthy: true,
    state: 'ready',
    allocated: res(2000, 4096),
    free: res(6000, 12288),
    runningWorkers: 2,
    lastHeartbeatMs: 9_500,
    unreachablePeers: [],
    ...over,
  };
}

const STATUS: ClusterStatusView = {
  fsmState: 'S3',
  openEvents: [{ id: 'e7-2', kind: 'AGENT_CRASH', subject: 'n2', sinceMs: 5000, state: 'open', detail: 'missed heartbeats' }],
  recovery: { phase: 'recovered', agentsReported: 2, agentsExpected: 3, appsReported: 1, appsExpected: 1, startedAtMs: 1000, finishedAtMs: 1300 },
  nodesHealthy: 2,
  nodesTimingOut: 0,
  nodesLost: 1,
  appsRunning: 1,
  connectivity: { version: 0, brokenLinks: [], partitioned: [] },
};

describe('dashboard views', () => {
  it('summary: leader, epoch, FSM state, open faults, and a timeline of transitions, faults and the recovery in time order', () => {
    const s = summaryView({
      address: 'm1:7070',
      epoch: '7',
      status: STATUS,
      faults: [{ id: 'e7-2', kind: 'AGENT_CRASH', subject: 'n2', sinceMs: 5000, state: 'open', detail: 'missed heartbeats' }],
      transitions: [{ from: 'S0', to: 'S3', atMs: 5000, event: 'post AGENT_CRASH n2 (e7-2)' }],
      jobs: [{ state: 'running' }, { state: 'succeeded' }, { state: 'running' }],
      nodeCount: 3,
      nowMs: 6000,
    });
    expect(s).to.include({ role: 'leader', address: 'm1:7070', epoch: '7', fsmState: 'S3', appsRunning: 1, nowMs: 6000 });
    expect(s.nodes).to.deep.equal({ healthy: 2, timingOut: 0, lost: 1, total: 3 });
    expect(s.jobs).to.deep.equal({ submitted: 0, running: 2, succeeded: 1, failed: 0, killed: 0 });
    expect(s.openFaults).to.have.length(1);
    expect(s.timeline.map((t) => t.what)).to.deep.equal(['recovery started', 'recovery finished', 'FSM S0 -> S3', 'AGENT_CRASH n2']);
    expect(s.timeline[1]!.detail).to.equal('agents 2/3, apps 1/1');
    expect(s.timeline[3]!.detail).to.equal('open: missed heartbeats');
  });

  it('nodes: capacity, use (the larger of CPU and memory), heartbeat age, sorted by id', () => {
    const rows = nodeRows(
      [
        mockNodeView({ info: mockNodeInfo({ nodeId: 'n2' }), allocated: res(1000, 12288), lastHeartbeatMs: 0, healthy: false, state: 'unreported' }),
        mockNodeView({ admin: { nodeId: 'n1', state: 'cordoned', reason: '', by: 'ops', sinceMs: 1, deadlineMs: 0 } }),
      ],
      10_000,
    );
    expect(rows.map((r) => r.nodeId)).to.deep.equal(['n1', 'n2']);
    expect(rows[0]).to.deep.include({ state: 'ready', admin: 'cordoned', use: 0.25, heartbeatAgeMs: 500, runningWorkers: 2 });
    expect(rows[0]!.capacity).to.deep.equal({ cpuMilli: 8000, memoryMb: 16384 });
    expect(rows[0]!.used).to.deep.equal({ cpuMilli: 2000, memoryMb: 4096 });
    expect(rows[1]).to.deep.include({ use: 0.75, heartbeatAgeMs: -1, healthy: false, admin: '' });
  });

  it('a job: progress from the AM where reported, else succeeded / total, weighted by instances; 1 once succeeded', () => {
    const tasks = [
      { name: 'map', total: 3, pending: 0, running: 1, succeeded: 2, failed: 0, retries: 1 },
      { name: 'reduce', total: 1, pending: 0, running: 1, succeeded: 0, failed: 0, retries: 0, progress: 0.5, backups: 1 },
    ];
    const r = jobRow(mockJob({ progress: tasks }));
    expect(r.tasks.map((t) => t.progress)).to.deep.equal([2 / 3, 0.5]);
    expect(r.tasks[1]!.backups).to.equal(1);
    expect(r.progress).to.be.closeTo((2 + 0.5) / 4, 1e-9);
    expect(r.instances).to.deep.equal({ total: 4, succeeded: 2, running: 2, failed: 0 });
    expect(jobRow(mockJob({ state: 'succeeded' })).progress).to.equal(1);
    expect(jobRow(mockJob()).progress).to.equal(0);
  });

  it('jobs: filtered by state and by id or name (any case), newest first, limited', () => {
    const jobs = [
      mockJob({ jobId: 'a', name: 'Word Count', submitSeq: 1 }),
      mockJob({ jobId: 'b', name: 'sort', submitSeq: 2, state: 'failed' }),
      mockJob({ jobId: 'c-words', name: 'grep', submitSeq: 3, state: 'succeeded' }),
    ];
    const all = jobRows(jobs, parseJobFilter(new URLSearchParams()));
    expect(all.jobs.map((j) => j.jobId)).to.deep.equal(['c-words', 'b', 'a']);
    expect(jobRows(jobs, parseJobFilter(new URLSearchParams('q=WORD'))).jobs.map((j) => j.jobId)).to.deep.equal(['c-words', 'a']);
    expect(jobRows(jobs, parseJobFilter(new URLSearchParams('state=failed,succeeded,bogus'))).jobs.map((j) => j.jobId)).to.deep.equal(['c-words', 'b']);
    const one = jobRows(jobs, parseJobFilter(new URLSearchParams('limit=1')));
    expect(one).to.deep.include({ total: 3 });
    expect(one.jobs).to.have.length(1);
    expect(parseJobFilter(new URLSearchParams('limit=100000')).limit).to.equal(MAX_JOB_ROWS);
    expect(parseJobFilter(new URLSearchParams('limit=-3')).limit).to.equal(MAX_JOB_ROWS);
  });

  it('the views of a real core: its nodes and its jobs', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }] });
    h.submit(mockSpec({ id: 'j1', name: '<b>bold</b>' }));
    expect(nodeRows(h.core.listNodes(), h.now).map((n) => n.nodeId)).to.deep.equal(['n1', 'n2']);
    const rows = jobRows(h.core.listJobs([]), parseJobFilter(new URLSearchParams()));
    // Names are data: the view keeps them as they are (the page puts them in with textContent).
    expect(rows.jobs[0]).to.include({ jobId: 'j1', name: '<b>bold</b>' });
  });

  it('worker ids: task, instance and attempt (task names may hold dots); the AM', () => {
    expect(parseWorkerId('map.3.2', '__am__')).to.deep.equal({ task: 'map', instance: 3, attempt: 2 });
    expect(parseWorkerId('stage.one.0.1', '__am__')).to.deep.equal({ task: 'stage.one', instance: 0, attempt: 1 });
    expect(parseWorkerId('am.4', '__am__')).to.deep.equal({ task: '__am__', instance: 0, attempt: 4 });
    expect(parseWorkerId('map', '__am__')).to.equal(undefined);
    expect(parseWorkerId('map.x.1', '__am__')).to.equal(undefined);
  });

  it('instances: agents (with exit codes) first, then the AM, then the snapshot log; grouped and sorted, log links escaped', () => {
    const agents: WorkerReport[] = [
      { workerId: 'map.0.1', task: 'map', instance: 0, attempt: 1, nodeId: 'n1', state: 'failed', exitCode: 3, signal: '' },
      { workerId: 'map.0.2', task: 'map', instance: 0, attempt: 2, nodeId: 'n2', state: 'succeeded', exitCode: 0 },
    ];
    const am: WorkerReport[] = [
      { workerId: 'map.0.2', task: 'map', instance: 0, attempt: 2, nodeId: 'n2', state: 'running' },
      { workerId: 'map.1.1', task: 'map', instance: 1, attempt: 1, nodeId: 'n1', state: 'running' },
    ];
    const snapshot: SnapshotEntry[] = [
      { task: 'map', instance: 0, attempt: 2, nodeId: 'n2', workerId: 'map.0.2', state: 'succeeded' },
      { task: 'a/b', instance: 0, attempt: 1, nodeId: 'n3', workerId: '', state: 'succeeded' },
    ];
    const rows = instanceRows(
      'job #1',
      { agents, am, snapshot },
      new Map([
        ['n1', 'n1:7001'],
        ['n2', 'n2:7001'],
      ]),
    );
    expect(rows.map((r) => `${r.task}[${r.instance}] ${r.state} on ${r.nodeId}`)).to.deep.equal([
      'a/b[0] succeeded on n3',
      'map[0] succeeded on n2',
      'map[1] running on n1',
    ]);
    const map0 = rows[1]!.attempts;
    expect(map0.map((a) => [a.attempt, a.state, a.exitCode, a.address])).to.deep.equal([
      [1, 'failed', 3, 'n1:7001'],
      [2, 'succeeded', 0, 'n2:7001'],
    ]);
    expect(rows[2]!.attempts[0]!.exitCode).to.equal(null);
    expect(rows[0]!.attempts[0]).to.include({ workerId: 'a/b.0.1', address: '', logUrl: '/api/jobs/job%20%231/logs/a%2Fb.0.1' });
  });

  it('routes: the page, the JSON views, logs and events; ids are decoded; anything else is none', () => {
    expect(dashboardRoute('GET', '/')).to.deep.equal({ kind: 'page' });
    expect(dashboardRoute('GET', '/api/summary')).to.deep.equal({ kind: 'summary' });
    expect(dashboardRoute('GET', '/api/nodes')).to.deep.equal({ kind: 'nodes' });
    expect(dashboardRoute('GET', '/api/jobs')).to.deep.equal({ kind: 'jobs' });
    expect(dashboardRoute('GET', '/events')).to.deep.equal({ kind: 'events' });
    expect(dashboardRoute('GET', '/api/jobs/job%20%231')).to.deep.equal({ kind: 'job', jobId: 'job #1' });
    expect(dashboardRoute('GET', '/api/jobs/j/logs/a%2Fb.0.1')).to.deep.equal({ kind: 'logs', jobId: 'j', workerId: 'a/b.0.1' });
    expect(dashboardRoute('GET', '/api/jobs/%E0%A4%A')).to.deep.equal({ kind: 'none' });
    expect(dashboardRoute('POST', '/api/jobs')).to.deep.equal({ kind: 'none' });
    expect(dashboardRoute('HEAD', '/')).to.deep.equal({ kind: 'page' });
    expect(dashboardRoute('HEAD', '/events')).to.deep.equal({ kind: 'none' });
    expect(dashboardRoute('GET', '/metrics')).to.deep.equal({ kind: 'none' });
    expect(dashboardRoute('GET', '/api/jobs/j/other/x')).to.deep.equal({ kind: 'none' });
  });

  it('fingerprint: the same views give the same print, a change another', () => {
    const a = fingerprint([{ x: 1 }, [1, 2]]);
    expect(a).to.match(/^[0-9a-f]{8}$/);
    expect(fingerprint([{ x: 1 }, [1, 2]])).to.equal(a);
    expect(fingerprint([{ x: 2 }, [1, 2]])).to.not.equal(a);
  });
});
