/**
 * The agent's Prometheus metrics (docs/architecture.md, "Metrics"): its workers by state (read
 * from the core at each scrape), launches, adoptions and checkpoint writes (counted where they
 * happen), gRPC handling time, and the application masters of its node's AM host (asked of the
 * host at each scrape: AMs run many to a process, so the node's agent serves their metrics,
 * summed over the node's hosted AMs: no label per app, so a scrape's size does not grow with the
 * jobs).
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import type { AmHostStats, WorkerState } from '@fuxi/common';
import { DaemonMetrics, LATENCY_BUCKETS } from '@fuxi/rpc/metrics';

/** What the metrics read of the agent at a scrape. */
export interface AgentMetricsSource {
  workerCounts(): { am: Record<WorkerState, number>; task: Record<WorkerState, number> };
  /** The AM host's stats; undefined when AMs are not hosted, no host runs, or it does not answer. */
  amHostStats(): Promise<AmHostStats | undefined>;
}

export type WorkerKind = 'am' | 'task';

export class AgentMetrics {
  readonly daemon = new DaemonMetrics();
  private readonly launches: Counter<'kind' | 'result'>;
  private readonly adoptions: Counter;
  private readonly checkpointWrites: Counter<'result'>;
  private readonly checkpointWrite: Histogram;
  /** The host process and retry total the counter last took. */
  private retriesSeen: { pid: number; total: number } | undefined;

  constructor(src: AgentMetricsSource) {
    const registers = [this.daemon.registry];
    new Gauge({
      name: 'fuxi_agent_workers',
      help: 'Workers in this agent\'s registry by state; kind="am" for application masters (hosted or not), "task" for the rest',
      labelNames: ['state', 'kind'],
      registers,
      collect() {
        const c = src.workerCounts();
        for (const kind of ['am', 'task'] as const) for (const [state, n] of Object.entries(c[kind])) this.set({ state: state.toLowerCase(), kind }, n);
      },
    });
    this.launches = new Counter({
      name: 'fuxi_agent_worker_launches_total',
      help: 'Worker processes (and hosted AMs) this agent started (result="started") or failed to start ("failed")',
      labelNames: ['kind', 'result'],
      registers,
    });
    this.adoptions = new Counter({
      name: 'fuxi_agent_worker_adoptions_total',
      help: 'Workers found still running at a restart from the local checkpoint and adopted',
      registers,
    });
    this.checkpointWrites = new Counter({
      name: 'fuxi_agent_checkpoint_writes_total',
      help: 'Local checkpoint writes (one atomic batch each), by result (ok, failed)',
      labelNames: ['result'],
      registers,
    });
    this.checkpointWrite = new Histogram({
      name: 'fuxi_agent_checkpoint_write_seconds',
      help: 'Time of one local checkpoint write',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    // The AM host's figures, asked for once per scrape: a scrape starts every collect() in one
    // synchronous pass, so the answer is shared until the next microtask.
    let pending: Promise<AmHostStats | undefined> | undefined;
    const hostStats = (): Promise<AmHostStats | undefined> => {
      if (!pending) {
        pending = src.amHostStats();
        queueMicrotask(() => (pending = undefined));
      }
      return pending;
    };
    new Gauge({
      name: 'fuxi_am_hosted',
      help: "Application masters running in this node's AM host (fuxi-amhost)",
      registers,
      async collect() {
        this.set((await hostStats())?.ams ?? 0);
      },
    });
    new Gauge({
      name: 'fuxi_am_instances',
      help: "Task instances of this node's hosted application masters by state (pending: waiting for dependencies or a slot), summed over them",
      labelNames: ['state'],
      registers,
      async collect() {
        const s = await hostStats();
        const i = s?.instances ?? { pending: 0, running: 0, succeeded: 0, failed: 0 };
        for (const [state, n] of Object.entries(i)) this.set({ state }, n);
      },
    });
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this;
    new Counter({
      name: 'fuxi_am_instance_retries_total',
      help: "Failed attempts of task instances that this node's hosted application masters retried (resets with the AM host)",
      registers,
      async collect() {
        const s = await hostStats();
        if (s?.retries === undefined) return;
        const seen = self.retriesSeen;
        if (!seen || seen.pid !== s.pid || s.retries < seen.total) {
          this.reset();
          this.inc(s.retries);
        } else if (s.retries > seen.total) this.inc(s.retries - seen.total);
        self.retriesSeen = { pid: s.pid, total: s.retries };
      },
    });
  }

  launched(kind: WorkerKind, ok: boolean): void {
    this.launches.inc({ kind, result: ok ? 'started' : 'failed' });
  }

  adopted(n: number): void {
    if (n > 0) this.adoptions.inc(n);
  }

  checkpointWritten(seconds: number, ok: boolean): void {
    this.checkpointWrite.observe(seconds);
    this.checkpointWrites.inc({ result: ok ? 'ok' : 'failed' });
  }
}
