/**
 * The load generator of the scheduler benchmark: N virtual nodes and the application masters of a
 * few apps in one process, speaking the real protocol to a real master over gRPC.
 *
 * Nodes: each virtual node registers (RegisterAgent) and heartbeats at the interval the master
 * asks for, spread evenly over the interval. They share ONE gRPC server (AgentService) bound on a
 * distinct loopback address per node (127.100.x.y, same port), so the master holds one channel per
 * agent as it would in a real cluster, and each UpdateGrants is routed to its node by the
 * `:authority` it was sent to. A node applies grant messages like the real agent (a delta only in
 * sequence, a full table when not older), reports its applied seq in heartbeats, and checks that
 * its grants never exceed its capacity (`overcommits`).
 *
 * AMs: the master launches an app's AM with StartWorkers (su `__am__`) on some node; that node
 * starts a `FakeAm` (see fake-am.ts) for the app and attempt named in the plan's environment.
 */
import { performance } from 'node:perf_hooks';
import { AM_SU, type Resource } from '@fuxi/common';
import { loadFuxiProto, type Grant__Output, type WorkerStatus } from '@fuxi/proto';
import { FakeAm, type AmMode, type GrantSink } from './fake-am.js';
import { RawGrpcClient, RawGrpcError, RawGrpcServer } from './raw-grpc.js';

export interface LoadOptions {
  master: string;
  nodes: number;
  racks: number;
  capacity: Resource;
  /** Resource of one benchmark slot (a worker). */
  slot: Resource;
  /** RegisterAgent calls in flight at once while nodes join. */
  registerConcurrency?: number;
  /**
   * How the master's pushes arrive: 'stream' (each node holds a WatchGrants stream and each AM a
   * WatchAssignments stream, as the real agent and AM do) or 'call' (no streams: the master calls
   * UpdateGrants / UpdateAssignments for every push).
   */
  pushTransport?: 'stream' | 'call';
  log?: (line: string) => void;
}

interface VirtualNode {
  index: number;
  nodeId: string;
  address: string;
  rack: string;
  registered: boolean;
  hbInFlight: boolean;
  grantSeq: number;
  /** (app, su) -> slots x resource, as the master granted. */
  grants: Map<string, { slots: number; cpuMilli: number; memoryMb: number }>;
  running: number;
  amWorkers: WorkerStatus[];
  cancelWatch?: () => void;
}

/** Counters of the load generator; `snapshot()` copies them so phases can be diffed. */
export interface LoadCounters {
  heartbeatsSent: number;
  heartbeatsOk: number;
  heartbeatErrors: number;
  heartbeatsSkipped: number;
  heartbeatFullTables: number;
  grantMessages: number;
  grantMessagesIgnored: number;
  /** WatchGrants streams the master ended while the load ran. */
  grantStreamsEnded: number;
  assignmentStreamsEnded: number;
  overcommits: number;
  reregistrations: number;
  slotsGranted: number;
  assignmentMessages: number;
  requestCalls: number;
  returnCalls: number;
  assignmentMessagesIgnored: number;
  fullTablesInAnswers: number;
  amErrors: number;
}

/** One sample per granted slot: request-to-grant latency in ms, recorded while `recording`. */
export class LatencyRecorder implements GrantSink {
  recording = false;
  samples: number[] = [];
  /** Slots granted while recording. */
  slots = 0;
  /** Granted slots without a matching request time (asked for before a cancel, say). */
  unmatched = 0;

  granted(k: number, now: number, requestedAt: readonly number[]): void {
    if (!this.recording) return;
    this.slots += k;
    for (const t of requestedAt) this.samples.push(now - t);
    this.unmatched += k - requestedAt.length;
  }

  reset(): void {
    this.samples = [];
    this.slots = 0;
    this.unmatched = 0;
  }
}

export class LoadGen {
  readonly recorder = new LatencyRecorder();
  /** Heartbeat round trips (ms) while the recorder records. */
  heartbeatRttMs: number[] = [];
  readonly nodes: VirtualNode[] = [];
  readonly apps = new Map<string, FakeAm>();
  private readonly byAddress = new Map<string, VirtualNode>();
  private readonly proto = loadFuxiProto();
  private readonly master = this.proto.MasterService.service;
  private readonly hbClient: RawGrpcClient;
  private readonly amClient: RawGrpcClient;
  private server: RawGrpcServer | undefined;
  private hbTimer: NodeJS.Timeout | undefined;
  private hbCredit = 0;
  private hbCursor = 0;
  private hbLast = 0;
  private epoch = '0';
  heartbeatIntervalMs = 1000;
  private amHeartbeatMs = 1000;
  private stopped = false;
  private readonly c: LoadCounters = {
    heartbeatsSent: 0,
    heartbeatsOk: 0,
    heartbeatErrors: 0,
    heartbeatsSkipped: 0,
    heartbeatFullTables: 0,
    grantMessages: 0,
    grantMessagesIgnored: 0,
    grantStreamsEnded: 0,
    assignmentStreamsEnded: 0,
    overcommits: 0,
    reregistrations: 0,
    slotsGranted: 0,
    assignmentMessages: 0,
    requestCalls: 0,
    returnCalls: 0,
    assignmentMessagesIgnored: 0,
    fullTablesInAnswers: 0,
    amErrors: 0,
  };

  constructor(private readonly o: LoadOptions) {
    this.hbClient = new RawGrpcClient(o.master);
    this.amClient = new RawGrpcClient(o.master);
  }

  private log(line: string): void {
    this.o.log?.(line);
  }

  /** Binds the agents' server on every node address, registers every node and starts heartbeats. */
  async start(): Promise<void> {
    const o = this.o;
    const server = this.agentServer();
    let port = 0;
    for (let i = 0; i < o.nodes; i++) {
      const ip = nodeIp(i);
      port = await server.listen(ip, port);
      const node: VirtualNode = {
        index: i,
        nodeId: `vn-${String(i).padStart(5, '0')}`,
        address: `${ip}:${port}`,
        rack: `rack-${i % o.racks}`,
        registered: false,
        hbInFlight: false,
        grantSeq: 0,
        grants: new Map(),
        running: 0,
        amWorkers: [],
      };
      this.nodes.push(node);
      this.byAddress.set(node.address, node);
    }
    this.server = server;
    this.log(`${o.nodes} node addresses bound (port ${port})`);
    const t0 = performance.now();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < this.nodes.length) {
        const node = this.nodes[next++]!;
        await this.register(node);
      }
    };
    await Promise.all(Array.from({ length: Math.min(o.registerConcurrency ?? 64, this.nodes.length) }, worker));
    this.log(`${o.nodes} nodes registered in ${Math.round(performance.now() - t0)} ms`);
    this.hbLast = performance.now();
    this.hbTimer = setInterval(() => this.heartbeatTick(), 10);
  }

  counters(): LoadCounters {
    const out = { ...this.c };
    for (const am of this.apps.values()) {
      out.slotsGranted += am.granted;
      out.assignmentMessages += am.assignmentMessages;
      out.requestCalls += am.requestCalls;
      out.returnCalls += am.returnCalls;
      out.assignmentMessagesIgnored += am.assignmentMessagesIgnored;
      out.fullTablesInAnswers += am.fullTablesInAnswers;
      out.amErrors += am.errors;
      out.assignmentStreamsEnded += am.streamsEnded;
    }
    return out;
  }

  /** Worker slots the master has granted on the nodes right now (from the agents' tables). */
  grantedSlotsOnNodes(): number {
    let n = 0;
    for (const node of this.nodes) n += node.running;
    return n;
  }

  setMode(mode: AmMode): void {
    for (const am of this.apps.values()) am.setMode(mode);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.hbTimer);
    for (const node of this.nodes) node.cancelWatch?.();
    await Promise.all([...this.apps.values()].map((a) => a.stop().catch(() => undefined)));
    await this.server?.close();
    this.hbClient.close();
    this.amClient.close();
  }

  // ---------------------------------------------------------------- nodes

  private async register(node: VirtualNode): Promise<void> {
    const o = this.o;
    for (let i = 0; ; i++) {
      try {
        const res = await this.hbClient.call(
          this.master.RegisterAgent,
          {
            node: { nodeId: node.nodeId, address: node.address, rack: node.rack, capacity: o.capacity, labels: {}, bootId: 'bench-boot' },
            epochSeen: this.epoch,
          },
          30_000,
        );
        this.epoch = res.epoch;
        this.heartbeatIntervalMs = res.heartbeatIntervalMs || this.heartbeatIntervalMs;
        node.registered = true;
        if ((o.pushTransport ?? 'stream') === 'stream') this.watchGrants(node);
        return;
      } catch (e) {
        if (i >= 10 || this.stopped) throw e;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  private watchGrants(node: VirtualNode): void {
    node.cancelWatch?.();
    node.cancelWatch = this.hbClient.stream(
      this.master.WatchGrants,
      { nodeId: node.nodeId, epoch: this.epoch },
      (m) => {
        this.c.grantMessages++;
        this.applyGrants(node, Number(m.seq), m.full, m.grants);
      },
      (status, message) => {
        node.cancelWatch = undefined;
        if (!this.stopped && status !== 1) this.c.grantStreamsEnded++;
        if (!this.stopped && status !== 0 && status !== 1) this.log(`grant stream of ${node.nodeId} ended: ${status} ${message}`);
      },
    );
  }

  /** Sends the heartbeats that fell due since the last tick, cycling over the nodes. */
  private heartbeatTick(): void {
    const now = performance.now();
    const n = this.nodes.length;
    this.hbCredit += ((now - this.hbLast) * n) / this.heartbeatIntervalMs;
    this.hbLast = now;
    let due = Math.floor(this.hbCredit);
    this.hbCredit -= due;
    if (due > n) due = n;
    for (let i = 0; i < due; i++) {
      const node = this.nodes[this.hbCursor]!;
      this.hbCursor = (this.hbCursor + 1) % n;
      if (!node.registered || node.hbInFlight) {
        this.c.heartbeatsSkipped++;
        continue;
      }
      this.sendHeartbeat(node);
    }
  }

  private sendHeartbeat(node: VirtualNode): void {
    node.hbInFlight = true;
    this.c.heartbeatsSent++;
    const t0 = performance.now();
    this.hbClient
      .call(
        this.master.Heartbeat,
        {
          nodeId: node.nodeId,
          epoch: this.epoch,
          grantSeq: String(node.grantSeq),
          used: { cpuMilli: 0, memoryMb: 0 },
          workers: { running: node.running, pending: 0, finished: 0 },
          amWorkers: node.amWorkers,
        },
        30_000,
      )
      .then(
        (res) => {
          node.hbInFlight = false;
          this.c.heartbeatsOk++;
          if (this.recorder.recording) this.heartbeatRttMs.push(performance.now() - t0);
          if (res.reregister) {
            this.c.reregistrations++;
            node.registered = false;
            void this.register(node).catch(() => undefined);
            return;
          }
          if (res.fullGrants) {
            this.c.heartbeatFullTables++;
            this.applyGrants(node, Number(res.grantSeq), true, res.grants);
          }
        },
        () => {
          node.hbInFlight = false;
          this.c.heartbeatErrors++;
        },
      );
  }

  private applyGrants(node: VirtualNode, seq: number, full: boolean, grants: readonly Grant__Output[]): void {
    if (full ? seq < node.grantSeq : seq !== node.grantSeq + 1) {
      this.c.grantMessagesIgnored++;
      return;
    }
    node.grantSeq = seq;
    if (full) node.grants.clear();
    for (const g of grants) {
      const key = `${g.appId}\u0000${g.suId}`;
      if (g.slots <= 0) node.grants.delete(key);
      else node.grants.set(key, { slots: g.slots, cpuMilli: g.resource?.cpuMilli ?? 0, memoryMb: g.resource?.memoryMb ?? 0 });
    }
    let cpu = 0;
    let mem = 0;
    let running = 0;
    for (const [key, g] of node.grants) {
      cpu += g.slots * g.cpuMilli;
      mem += g.slots * g.memoryMb;
      if (!key.endsWith(`\u0000${AM_SU}`)) running += g.slots;
    }
    node.running = running;
    if (cpu > this.o.capacity.cpuMilli || mem > this.o.capacity.memoryMb) this.c.overcommits++;
  }

  /** One AgentService for every virtual node; a call is routed by the address it was sent to. */
  private agentServer(): RawGrpcServer {
    const agent = this.proto.AgentService.service;
    const nodeAt = (authority: string): VirtualNode => {
      const node = this.byAddress.get(authority);
      if (!node) throw new RawGrpcError(5, `no virtual node at ${authority}`);
      return node;
    };
    return new RawGrpcServer()
      .handle(agent.UpdateGrants, (r, authority) => {
        const node = nodeAt(authority);
        this.c.grantMessages++;
        this.applyGrants(node, Number(r.seq), r.full, r.grants);
        return { appliedSeq: String(node.grantSeq) };
      })
      .handle(agent.StartWorkers, (r, authority) => {
        const node = nodeAt(authority);
        const workers: WorkerStatus[] = [];
        for (const p of r.plans) {
          const st: WorkerStatus = {
            workerId: p.workerId,
            appId: r.appId,
            suId: p.suId,
            task: p.task,
            instance: p.instance,
            attempt: p.attempt,
            amAttempt: r.amAttempt,
            nodeId: node.nodeId,
            state: 'WORKER_STATE_RUNNING',
            pid: 0,
            startedAtMs: String(Date.now()),
            resource: p.resource ?? { cpuMilli: 0, memoryMb: 0 },
          };
          workers.push(st);
          if (p.suId === AM_SU) {
            const env = p.command?.env ?? {};
            const appId = env.FUXI_APP_ID ?? r.appId;
            const attempt = Number(env.FUXI_AM_ATTEMPT ?? r.amAttempt);
            node.amWorkers = node.amWorkers.filter((w) => w.appId !== appId).concat([st]);
            this.launchAm(appId, attempt, env.FUXI_AM_TOKEN ?? '');
          }
        }
        return { workers };
      })
      .handle(agent.StopWorkers, () => ({ workers: [] }))
      .handle(agent.ListWorkers, () => ({ workers: [] }))
      .handle(agent.GetAgentState, (_r, authority) => ({ epoch: this.epoch, grantSeq: String(nodeAt(authority).grantSeq), grants: [], workers: [] }));
  }

  // ---------------------------------------------------------------- application masters

  private launchAm(appId: string, attempt: number, token: string): void {
    const old = this.apps.get(appId);
    if (old && old.attempt >= attempt) return;
    if (old) {
      this.log(`app ${appId}: AM attempt ${attempt} replaces ${old.attempt}`);
      void old.stop();
    }
    const am = new FakeAm(
      appId,
      attempt,
      this.amClient,
      this.o.slot,
      this.recorder,
      this.amHeartbeatMs,
      (this.o.pushTransport ?? 'stream') === 'stream',
      token,
    );
    this.apps.set(appId, am);
    am.start().catch((e: unknown) => this.log(`app ${appId}: AM could not register: ${String(e)}`));
  }
}

/** Loopback address of virtual node i: 127.100+.x.y, never .0 or .255. */
export function nodeIp(i: number): string {
  const b = 100 + Math.floor(i / 62_500);
  const r = i % 62_500;
  return `127.${b}.${1 + Math.floor(r / 250)}.${1 + (r % 250)}`;
}
