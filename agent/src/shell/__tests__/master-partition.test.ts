/**
 * An agent cut from the master (its heartbeats fail) while its AM still reaches it: its workers run
 * on, the AM may still start workers inside the grants the agent holds, and heartbeats resume when
 * the master answers again. The master keeps such a node's slots (partitioned, or timing out until
 * it is lost); the agent never stops work on its own for want of the master.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { nullLogger, UnavailableError } from '@fuxi/common';
import { loadFuxiProto, type HeartbeatRequest__Output, type HeartbeatResponse } from '@fuxi/proto';
import { connect, implement, startServer, type RunningServer } from '@fuxi/rpc';
import { removeAgentGroups } from '../cgroups.js';
import { Agent } from '../agent.js';
import { resolveConfig } from '../config.js';
import { alive, AM_TOKEN, AM_TOKEN_HASH, stubs, waitFor, removeWorkDir } from './helpers.js';

describe('Agent shell cut from the master', function () {
  this.timeout(60_000);
  const proto = loadFuxiProto();
  let workDir: string;
  let master: RunningServer;
  let agent: Agent;
  let cut = false;
  let answered = 0;
  let refused = 0;
  const heartbeats: HeartbeatRequest__Output[] = [];
  const pids: number[] = [];
  const slot = { cpuMilli: 100, memoryMb: 64 };

  before(async () => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-agent-partition-'));
    master = await startServer({
      bind: '127.0.0.1:0',
      log: nullLogger,
      services: [
        {
          name: 'fuxi.v1.MasterService',
          definition: proto.MasterService.service,
          handlers: implement(
            proto.MasterService.service,
            stubs(proto.MasterService.service, {
              RegisterAgent: () => ({ epoch: '3', heartbeatIntervalMs: 100 }),
              Heartbeat: (req: HeartbeatRequest__Output): HeartbeatResponse => {
                if (cut) {
                  refused++;
                  throw new UnavailableError('the link to this agent is cut');
                }
                answered++;
                heartbeats.push(req);
                return { epoch: '3' };
              },
            }),
            nullLogger,
          ),
        },
      ],
    });
    const cfg = resolveConfig({ master: master.address, nodeId: 'node-p', cpu: '2', memory: '1Gi', workDir, stopGraceMs: 500, pendingTimeoutMs: 20_000 }, {});
    agent = new Agent(cfg, { log: nullLogger, tickMs: 100 });
    await agent.start();
  });

  after(async () => {
    await agent?.stop();
    await master?.shutdown(100);
    for (const pid of pids) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    // The worker cgroups of this agent (every process is gone by now).
    await removeAgentGroups('node-p', workDir);
    removeWorkDir(workDir);
  });

  it('keeps its workers running through a long cut, takes plans from the AM meanwhile, and heartbeats again after it', async () => {
    await waitFor(() => agent.registered && answered >= 2, 20_000, 'registration and heartbeats');
    const c = connect(proto.AgentService, agent.address, { token: AM_TOKEN });
    await c.UpdateGrants({ epoch: '3', seq: '1', full: true, grants: [{ appId: 'app1', suId: 'map', slots: 2, resource: slot, amTokenHash: AM_TOKEN_HASH }] });
    const plan = (instance: number) => ({
      workerId: `app1-map-${instance}-1`,
      suId: 'map',
      task: 'map',
      instance,
      attempt: 1,
      command: { argv: ['sleep', '120'] },
      resource: slot,
    });
    const first = await c.StartWorkers({ appId: 'app1', amAttempt: 1, plans: [plan(0)] });
    await waitFor(() => agent.core.listWorkers().some((w) => w.workerId === 'app1-map-0-1' && w.state === 'RUNNING'), 20_000, 'worker 0 running');
    const pid0 = agent.core.listWorkers().find((w) => w.workerId === 'app1-map-0-1')?.pid ?? 0;
    expect(first.workers[0]?.workerId).to.equal('app1-map-0-1');
    expect(pid0).to.be.greaterThan(0);
    pids.push(pid0);

    cut = true;
    // Far more failed heartbeats than any timeout of the master's (at 100 ms per heartbeat).
    await waitFor(() => refused >= 40, 30_000, '40 failed heartbeats');
    expect(alive(pid0)).to.equal(true);
    // The AM still reaches the agent: a plan inside the grant the agent holds starts.
    await c.StartWorkers({ appId: 'app1', amAttempt: 1, plans: [plan(1)] });
    await waitFor(() => agent.core.listWorkers().some((w) => w.workerId === 'app1-map-1-1' && w.state === 'RUNNING'), 20_000, 'worker 1 running');
    const pid1 = agent.core.listWorkers().find((w) => w.workerId === 'app1-map-1-1')?.pid ?? 0;
    pids.push(pid1);
    await waitFor(() => refused >= 60, 30_000, '60 failed heartbeats');
    const during = await c.ListWorkers({ appId: 'app1' });
    expect(during.workers.map((w) => [w.workerId, w.state])).to.deep.equal([
      ['app1-map-0-1', 'WORKER_STATE_RUNNING'],
      ['app1-map-1-1', 'WORKER_STATE_RUNNING'],
    ]);

    cut = false;
    const seen = heartbeats.length;
    await waitFor(() => heartbeats.length >= seen + 2, 20_000, 'heartbeats after the cut');
    expect(heartbeats.at(-1)?.workers).to.deep.include({ running: 2 });
    expect([alive(pid0), alive(pid1)]).to.deep.equal([true, true]);
    c.close();
  });
});
