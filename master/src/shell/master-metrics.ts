/**
 * The master's Prometheus metrics (docs/architecture.md, "Metrics"). Gauges are read from the
 * core at each scrape (`MasterCore.gauges`); grants and their waits are drained from it then
 * (`drainGrantStats`); times the shell measures (scheduling passes, failover phases, store
 * writes, gRPC calls) are observed where they happen.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import { FSM_STATES } from '@fuxi/common';
import { DaemonMetrics, LATENCY_BUCKETS, SLOW_BUCKETS } from '@fuxi/rpc/metrics';
import { FAULT_KINDS } from '../core/fault-fsm.js';
import type { MasterCore } from '../core/master-core.js';

/** What the metrics read of the master process at a scrape. */
export interface MasterMetricsSource {
  /** The core while this process leads, else undefined. */
  core(): MasterCore | undefined;
  epoch(): string;
}

export type FailoverPhase = 'load' | 'aggregation' | 'total';

export class MasterMetrics {
  readonly daemon = new DaemonMetrics();
  private readonly grants: Counter;
  private readonly grantWait: Histogram;
  private readonly schedulingPass: Histogram;
  private readonly failoverPhase: Histogram<'phase'>;
  private readonly storeWrite: Histogram;
  private readonly storeWriteFailures: Counter;
  private readonly faultRecovery: Histogram<'kind' | 'phase'>;
  /** The core whose grant count the counter last took, and that count. */
  private drained: { core: MasterCore; granted: number } | undefined;

  constructor(private readonly src: MasterMetricsSource) {
    const registers = [this.daemon.registry];
    const leading = () => src.core();
    new Gauge({
      name: 'fuxi_master_leader',
      help: '1 while this master process leads (holds the election and its core), else 0',
      registers,
      collect() {
        this.set(leading() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'fuxi_master_epoch',
      help: "The epoch of this master's term while it leads (its election key's create revision with etcd), else 0",
      registers,
      collect() {
        this.set(leading() ? Number(src.epoch()) || 0 : 0);
      },
    });
    new Gauge({
      name: 'fuxi_master_recovering',
      help: "1 while a failover's aggregation window is open on this leader, else 0",
      registers,
      collect() {
        this.set(leading()?.gauges().recovering ? 1 : 0);
      },
    });
    new Gauge({
      name: 'fuxi_master_nodes',
      help: 'Nodes known to the leader, by status (unreported, missing, healthy, timing-out, partitioned, lost); none on a standby',
      labelNames: ['state'],
      registers,
      collect() {
        this.reset();
        const g = leading()?.gauges();
        if (g) for (const [state, n] of Object.entries(g.nodes)) this.set({ state }, n);
      },
    });
    new Gauge({
      name: 'fuxi_master_jobs',
      help: 'Jobs the leader keeps, by state (submitted, running, succeeded, failed, killed); none on a standby',
      labelNames: ['state'],
      registers,
      collect() {
        this.reset();
        const g = leading()?.gauges();
        if (g) for (const [state, n] of Object.entries(g.jobs)) this.set({ state }, n);
      },
    });
    new Gauge({
      name: 'fuxi_master_application_masters',
      help: "Unfinished apps by their AM's state (waiting for a slot, launching, running)",
      labelNames: ['state'],
      registers,
      collect() {
        this.reset();
        const g = leading()?.gauges();
        if (g) for (const [state, n] of Object.entries(g.ams)) this.set({ state }, n);
      },
    });
    new Gauge({
      name: 'fuxi_master_pending_slots',
      help: 'Slots asked for and not granted yet: of AMs (kind="am") and of their tasks (kind="task")',
      labelNames: ['kind'],
      registers,
      collect() {
        this.reset();
        const g = leading()?.gauges();
        if (g) for (const [kind, n] of Object.entries(g.pendingSlots)) this.set({ kind }, n);
      },
    });
    new Gauge({
      name: 'fuxi_master_faults_open',
      help: "Faults on the leader's bulletin board not resolved yet, by kind (FM_CRASH, AM_CRASH, AM_TIMING, AGENT_CRASH, AGENT_TIMING, AGENT_PARTITIONED)",
      labelNames: ['kind'],
      registers,
      collect() {
        this.reset();
        const core = leading();
        if (!core) return;
        const open = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0]));
        for (const e of core.faults.open()) open[e.kind] = (open[e.kind] ?? 0) + 1;
        for (const [kind, n] of Object.entries(open)) this.set({ kind }, n);
      },
    });
    new Gauge({
      name: 'fuxi_master_fault_fsm_state',
      help: "1 for the leader's fault FSM state (S0 normal, S1 master, S2 AM, S3 agent failure, S4-S6 and S2S3 their combinations), 0 for the others",
      labelNames: ['state'],
      registers,
      collect() {
        this.reset();
        const core = leading();
        if (!core) return;
        for (const state of FSM_STATES) this.set({ state }, core.faults.state === state ? 1 : 0);
      },
    });
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this;
    this.grants = new Counter({
      name: 'fuxi_master_grants_total',
      help: 'Slots the scheduler granted while this process led (rate() of it: grants per second)',
      registers,
      collect() {
        self.drain();
      },
    });
    this.grantWait = new Histogram({
      name: 'fuxi_master_request_to_grant_seconds',
      help: 'Per granted slot: from when the leader first saw it asked for to the scheduling pass that granted it',
      buckets: SLOW_BUCKETS,
      registers,
      collect() {
        self.drain();
      },
    });
    this.schedulingPass = new Histogram({
      name: 'fuxi_master_scheduling_pass_seconds',
      help: 'Time of one batched scheduling pass of the core (placing every outstanding request)',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.failoverPhase = new Histogram({
      name: 'fuxi_master_failover_phase_seconds',
      help: 'Taking over as leader, by phase: load (reading the hard state), aggregation (the window for soft state), total (elected to recovered)',
      labelNames: ['phase'],
      buckets: SLOW_BUCKETS,
      registers,
    });
    this.storeWrite = new Histogram({
      name: 'fuxi_master_store_write_seconds',
      help: 'Time of one hard-state write (a store batch) from its start to durable',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.faultRecovery = new Histogram({
      name: 'fuxi_master_fault_recovery_seconds',
      help: 'Resolved faults by kind and phase: detect (posted to recovery started), recover (recovery started to resolved), total (posted to resolved)',
      labelNames: ['kind', 'phase'],
      buckets: SLOW_BUCKETS,
      registers,
      collect() {
        self.drain();
      },
    });
    this.storeWriteFailures = new Counter({
      name: 'fuxi_master_store_write_failures_total',
      help: 'Hard-state writes that failed (fenced, out of space, or etcd unreachable)',
      registers,
    });
  }

  /** Takes the core's grants and waits since the last drain into the counter and the histogram. */
  private drain(): void {
    const core = this.src.core();
    if (!core) return;
    const { granted, waits } = core.drainGrantStats();
    const before = this.drained?.core === core ? this.drained.granted : 0;
    if (granted > before) this.grants.inc(granted - before);
    this.drained = { core, granted };
    for (const [ms, slots] of waits) for (let i = 0; i < slots; i++) this.grantWait.observe(ms / 1000);
    for (const f of core.faults.takeResolved()) {
      this.faultRecovery.observe({ kind: f.kind, phase: 'total' }, f.totalMs / 1000);
      if (f.detectMs !== undefined) this.faultRecovery.observe({ kind: f.kind, phase: 'detect' }, f.detectMs / 1000);
      if (f.recoverMs !== undefined) this.faultRecovery.observe({ kind: f.kind, phase: 'recover' }, f.recoverMs / 1000);
    }
  }

  /** Before a core is replaced (a step-down, a new term): what it granted still counts. */
  flush(): void {
    this.drain();
  }

  schedulingPassSeconds(s: number): void {
    this.schedulingPass.observe(s);
  }

  failoverPhaseSeconds(phase: FailoverPhase, s: number): void {
    this.failoverPhase.observe({ phase }, s);
  }

  storeWriteSeconds(s: number, ok: boolean): void {
    this.storeWrite.observe(s);
    if (!ok) this.storeWriteFailures.inc();
  }
}
