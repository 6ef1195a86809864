/** Test factories for client tests. */
import type { ClusterStatus__Output, FaultEvent__Output, JobInfo__Output, NodeStatus__Output, TaskProgress__Output } from '@fuxi/proto';

export function mockProgress(name: string, over: Partial<TaskProgress__Output> = {}): TaskProgress__Output {
  return { name, total: 0, pending: 0, running: 0, succeeded: 0, failed: 0, retries: 0, reexecutions: 0, progress: 0, backups: 0, ...over };
}

export function mockJob(over: Partial<JobInfo__Output> = {}): JobInfo__Output {
  return {
    jobId: 'wc-1',
    name: 'wordcount',
    state: 'JOB_STATE_RUNNING',
    message: '',
    quotaGroup: 'default',
    priority: 0,
    submittedAtMs: '1767225600000',
    finishedAtMs: '0',
    amAttempt: 1,
    amNodeId: 'n1',
    amAddress: '127.0.0.1:7071',
    tasks: [],
    spec: null,
    owner: 'alice',
    ...over,
  };
}

export function mockNode(id: string, address: string, over: Partial<NodeStatus__Output> = {}): NodeStatus__Output {
  return {
    node: {
      nodeId: id,
      address,
      rack: 'r1',
      capacity: { cpuMilli: 8000, memoryMb: 16384 },
      labels: {},
      bootId: 'b',
      probePort: 0,
      resourceEnforcement: 'cgroup-v1',
      workerUser: 'nobody',
    },
    healthy: true,
    state: 'ready',
    allocated: { cpuMilli: 500, memoryMb: 512 },
    free: { cpuMilli: 7500, memoryMb: 15872 },
    runningWorkers: 1,
    lastHeartbeatMs: '0',
    unreachablePeers: [],
    admin: null,
    prediction: '',
    predictionReason: '',
    predictionJobs: [],
    testbed: '',
    ...over,
  };
}

export function mockFault(over: Partial<FaultEvent__Output> = {}): FaultEvent__Output {
  return { id: 'fault-1', kind: 'FM_CRASH', subject: '', sinceMs: '1767225600000', state: 'open', detail: '', ...over };
}

/** A healthy cluster after no failover: S0, nothing open. */
export function mockClusterStatus(over: Partial<ClusterStatus__Output> = {}): ClusterStatus__Output {
  return {
    leader: '127.0.0.1:7070',
    epoch: '7',
    fsmState: 'S0',
    openEvents: [],
    recovery: { phase: 'normal', agentsReported: 0, agentsExpected: 0, appsReported: 0, appsExpected: 0, startedAtMs: '0', finishedAtMs: '0' },
    nodesHealthy: 3,
    nodesTimingOut: 0,
    nodesLost: 0,
    appsRunning: 2,
    conditions: [],
    connectivity: null,
    dashboardUrl: '',
    ...over,
  };
}

/** A writable that records what was written. */
export class Capture {
  chunks: Array<string | Uint8Array> = [];
  constructor(readonly isTTY = false) {}
  write(s: string | Uint8Array): boolean {
    this.chunks.push(s);
    return true;
  }
  get text(): string {
    return this.chunks.map((c) => (typeof c === 'string' ? c : Buffer.from(c).toString())).join('');
  }
}
