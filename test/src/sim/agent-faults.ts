/**
 * Fault injection on one virtual node of a simulated-node host (test-only; used by the paper
 * evaluation benchmark through the host's control channel).
 *
 * - `pauseAgent`: a timing failure, as a SIGSTOPped agent looks from outside: no heartbeat, no
 *   registration, no state report for `ms`, and every RPC it receives (grants, plans, stops) and
 *   every worker exit it sees is carried out only when it resumes (the calls wait; the callers'
 *   deadlines may pass). Its workers keep running. Reaches into the Agent's private `heartbeat`,
 *   `register`, `reportState` and `run` (instance overrides, removed on resume).
 * - `restartAgent`: a crash and restart: the agent stops (its workers keep running in the
 *   simulated driver, whose exits are recorded meanwhile), stays down for `downMs`, and a new
 *   `Agent` for the same node, on the same address, with the same checkpoint (the local LevelDB
 *   of a real agent survives its crash) and driver restores from the checkpoint and re-adopts
 *   the live workers.
 */
import { Agent, type AgentCheckpoint, type AgentConfig } from '@fuxi/agent';
import type { Logger } from '@fuxi/common';
import type { SimProcessDriver } from './sim-driver.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

type Overridable = Record<'heartbeat' | 'register' | 'reportState' | 'run', ((...a: unknown[]) => Promise<unknown>) | undefined>;

export interface PauseResult {
  /** Pause start -> the first heartbeat the master answered after it. */
  recoveredMs: number;
}

/** Pauses `agent` for `ms` (see the file comment); resolves once a heartbeat went through after it. */
export function pauseAgent(agent: Agent, ms: number): Promise<PauseResult> {
  const t0 = Date.now();
  const inner = agent as unknown as Overridable;
  const proto = Object.getPrototypeOf(agent) as Overridable;
  const resume = sleep(ms);
  let recovered!: (r: PauseResult) => void;
  const done = new Promise<PauseResult>((r) => (recovered = r));
  for (const m of ['register', 'reportState', 'run'] as const) {
    const original = proto[m]!;
    inner[m] = async function (this: Agent, ...a: unknown[]) {
      await resume;
      return original.apply(this, a);
    };
  }
  const hb = proto.heartbeat!;
  inner.heartbeat = async function (this: Agent) {
    await resume;
    const failuresBefore = (this as unknown as { hbFailures: number }).hbFailures;
    await hb.apply(this);
    const failures = (this as unknown as { hbFailures: number }).hbFailures;
    if (failures === 0 || failures < failuresBefore) {
      delete inner.heartbeat;
      recovered({ recoveredMs: Date.now() - t0 });
    }
  };
  void resume.then(() => {
    delete inner.register;
    delete inner.reportState;
    delete inner.run;
  });
  return done;
}

export interface RestartOptions {
  config: AgentConfig;
  driver: SimProcessDriver;
  checkpoint: AgentCheckpoint;
  log: Logger;
  tickMs: number;
  downMs: number;
}

export interface RestartResult {
  agent: Agent;
  /** Crash -> the restarted agent's first heartbeat answered by the master. */
  recoveredMs: number;
  adopted: number;
  ended: number;
}

/** Crashes `old` and starts its replacement (see the file comment). */
export async function restartAgent(old: Agent, o: RestartOptions): Promise<RestartResult> {
  const t0 = Date.now();
  const address = old.address;
  await old.stop();
  await sleep(o.downMs);
  let agent = new Agent({ ...o.config, listen: address }, { driver: o.driver, log: o.log, tickMs: o.tickMs, checkpoint: o.checkpoint });
  try {
    await agent.start();
  } catch (e) {
    // The port could not be bound again: any free port (the master learns it on registration).
    o.log.warn({ address, err: String(e) }, 'restarted agent could not bind its old address; using a new port');
    agent = new Agent({ ...o.config, listen: '127.0.0.1:0' }, { driver: o.driver, log: o.log, tickMs: o.tickMs, checkpoint: o.checkpoint });
    await agent.start();
  }
  o.driver.reattach();
  while (agent.msToFirstHeartbeat === 0) await sleep(20);
  return { agent, recoveredMs: Date.now() - t0, adopted: agent.restored?.adopted ?? 0, ended: agent.restored?.ended ?? 0 };
}
