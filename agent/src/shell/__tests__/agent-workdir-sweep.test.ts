/**
 * The agent and its work dir sweep (in-process agent, fake master and AM, real workers): an app
 * whose directories are all finished is read once and then settled; a worker of it started later
 * makes the next sweep read it again, so the new directory is seen (workdir-sweeper.ts).
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { nullLogger } from '@fuxi/common';
import { loadFuxiProto, type HeartbeatResponse, type WorkerEventsRequest__Output, type WorkerStatus__Output } from '@fuxi/proto';
import { connect, type RunningServer } from '@fuxi/rpc';
import { removeAgentGroups } from '../cgroups.js';
import { Agent } from '../agent.js';
import { resolveConfig } from '../config.js';
import { AM_TOKEN, AM_TOKEN_HASH, startFake, waitFor, removeWorkDir } from './helpers.js';

describe('Agent shell: work dir sweep of settled apps (in-process, fake master and AM)', function () {
  this.timeout(30_000);
  const proto = loadFuxiProto();
  let workDir: string;
  let master: RunningServer;
  let am: RunningServer;
  let agent: Agent;
  const amEvents: WorkerStatus__Output[] = [];
  const slot = { cpuMilli: 100, memoryMb: 64 };
  let seq = 0;

  before(async () => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-agent-sweep-'));
    master = await startFake(proto, 'MasterService', {
      RegisterAgent: () => ({ epoch: '3', heartbeatIntervalMs: 100 }),
      Heartbeat: (): HeartbeatResponse => ({ epoch: '3' }),
    });
    am = await startFake(proto, 'AppMasterService', {
      WorkerEvents: (req: WorkerEventsRequest__Output) => {
        amEvents.push(...req.events);
        return {};
      },
    });
    const cfg = resolveConfig({ master: master.address, nodeId: 'node-sweep', cpu: '2', memory: '1Gi', workDir, stopGraceMs: 500 }, {});
    // No sweep of its own during the test (its first comes at a random point of this interval).
    agent = new Agent(cfg, { log: nullLogger, tickMs: 100, workDirSweepMs: 2 ** 31 - 1 });
    await agent.start();
    await waitFor(() => agent.registered);
  });

  after(async () => {
    await agent?.stop();
    await master?.shutdown(100);
    await am?.shutdown(100);
    await removeAgentGroups('node-sweep', workDir);
    removeWorkDir(workDir);
  });

  /** Grants `appId` a slot, runs `workerId` (`true`) there until it succeeds, then takes the grant back. */
  async function runOne(appId: string, workerId: string): Promise<void> {
    const c = connect(proto.AgentService, agent.address, { token: AM_TOKEN });
    try {
      await c.UpdateGrants({
        epoch: '3',
        seq: String(++seq),
        full: true,
        grants: [{ appId, suId: 'map', slots: 1, resource: slot, amTokenHash: AM_TOKEN_HASH }],
      });
      await c.StartWorkers({
        appId,
        amAttempt: 1,
        amAddress: am.address,
        plans: [{ workerId, suId: 'map', task: 'map', instance: 0, attempt: 1, command: { argv: ['true'] }, resource: slot }],
      });
      await waitFor(() => amEvents.some((e) => e.workerId === workerId && e.state === 'WORKER_STATE_SUCCEEDED'));
      await c.UpdateGrants({ epoch: '3', seq: String(++seq), full: true, grants: [] });
    } finally {
      c.close();
    }
  }

  it('reads a finished app once, then not again until a worker of it starts here', async () => {
    await runOne('swept', 'swept-w1');
    const first = await agent.sweepWorkDirs();
    expect(first?.appsRead).to.equal(1);
    expect(first?.deleted).to.deep.equal([]); // within retention
    expect((await agent.sweepWorkDirs())?.appsRead).to.equal(0);

    await runOne('swept', 'swept-w2');
    expect(fs.readdirSync(path.join(workDir, 'apps', 'swept')).sort()).to.deep.equal(['swept-w1', 'swept-w2']);
    expect((await agent.sweepWorkDirs())?.appsRead).to.equal(1);
    expect((await agent.sweepWorkDirs())?.appsRead).to.equal(0);
  });
});
