import { expect } from 'chai';
import type { AmHostStats, WorkerState } from '@fuxi/common';
import { AgentMetrics } from '../agent-metrics.js';

const zero = (): Record<WorkerState, number> => ({ PENDING: 0, STARTING: 0, RUNNING: 0, SUCCEEDED: 0, FAILED: 0, KILLED: 0, REJECTED: 0 });

function hostStats(pid: number, retries: number, running = 0): AmHostStats {
  return {
    pid,
    ams: running > 0 ? 1 : 0,
    threads: 0,
    rssMb: 50,
    cpuMs: 10,
    loopDelayMs: { p50: 0, p99: 0, p999: 0, max: 0, samples: 0 },
    instances: { pending: 0, running, succeeded: 0, failed: 0 },
    retries,
  };
}

/** The value of one sample line (`name{labels}` as printed), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('AgentMetrics', () => {
  it('shows workers by state and kind, and the AM host figures, asking the host once per scrape', async () => {
    const am = zero();
    am.RUNNING = 1;
    const task = zero();
    task.RUNNING = 3;
    task.FAILED = 1;
    let asked = 0;
    const m = new AgentMetrics({
      workerCounts: () => ({ am, task }),
      amHostStats: async () => {
        asked++;
        return hostStats(100, 2, 3);
      },
    });
    const text = await m.daemon.registry.metrics();
    expect(asked).to.equal(1);
    expect(sample(text, 'fuxi_agent_workers{state="running",kind="task"}')).to.equal(3);
    expect(sample(text, 'fuxi_agent_workers{state="failed",kind="task"}')).to.equal(1);
    expect(sample(text, 'fuxi_agent_workers{state="running",kind="am"}')).to.equal(1);
    expect(sample(text, 'fuxi_am_hosted')).to.equal(1);
    expect(sample(text, 'fuxi_am_instances{state="running"}')).to.equal(3);
    expect(sample(text, 'fuxi_am_instance_retries_total')).to.equal(2);
  });

  it("follows the AM host's retry total, and starts again with a new host (a counter reset)", async () => {
    let stats: AmHostStats | undefined = hostStats(100, 2);
    const m = new AgentMetrics({ workerCounts: () => ({ am: zero(), task: zero() }), amHostStats: async () => stats });
    const retries = async () => sample(await m.daemon.registry.metrics(), 'fuxi_am_instance_retries_total');
    expect(await retries()).to.equal(2);
    stats = hostStats(100, 5);
    expect(await retries()).to.equal(5);
    stats = undefined; // no host answering: the counter keeps its value
    expect(await retries()).to.equal(5);
    stats = hostStats(200, 1); // a new host process
    expect(await retries()).to.equal(1);
    stats = hostStats(200, 4);
    expect(await retries()).to.equal(4);
  });

  it('counts launches, adoptions and checkpoint writes', async () => {
    const m = new AgentMetrics({ workerCounts: () => ({ am: zero(), task: zero() }), amHostStats: async () => undefined });
    m.launched('task', true);
    m.launched('task', true);
    m.launched('am', false);
    m.adopted(3);
    m.adopted(0);
    m.checkpointWritten(0.002, true);
    m.checkpointWritten(0.5, false);
    const text = await m.daemon.registry.metrics();
    expect(sample(text, 'fuxi_agent_worker_launches_total{kind="task",result="started"}')).to.equal(2);
    expect(sample(text, 'fuxi_agent_worker_launches_total{kind="am",result="failed"}')).to.equal(1);
    expect(sample(text, 'fuxi_agent_worker_adoptions_total')).to.equal(3);
    expect(sample(text, 'fuxi_agent_checkpoint_writes_total{result="ok"}')).to.equal(1);
    expect(sample(text, 'fuxi_agent_checkpoint_writes_total{result="failed"}')).to.equal(1);
    expect(sample(text, 'fuxi_agent_checkpoint_write_seconds_count')).to.equal(2);
    expect(sample(text, 'fuxi_am_hosted')).to.equal(0);
  });
});
