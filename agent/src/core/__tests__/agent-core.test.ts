import { expect } from 'chai';
import { FailedPreconditionError, InvalidArgumentError, res, StaleEpochError, type Resource } from '@fuxi/common';
import { AM_SU } from '@fuxi/common';
import { AgentCore, type Effect, type GrantEntry, type PlanInput, type StartWorkersInput } from '../agent-core.js';

// ---------------------------------------------------------------- factories

const SLOT = res(1000, 1024);

function mockCore(opts: { capacity?: Resource; pendingTimeoutMs?: number } = {}): AgentCore {
  return new AgentCore({ nodeId: 'n1', capacity: opts.capacity ?? res(8000, 16384), pendingTimeoutMs: opts.pendingTimeoutMs ?? 60_000 });
}

function grant(appId: string, suId: string, slots: number, resource: Resource = SLOT, amAttempt = 0): GrantEntry {
  return { appId, suId, slots, resource, amAttempt };
}

function plan(workerId: string, over: Partial<PlanInput> = {}): PlanInput {
  return {
    workerId,
    suId: 'map',
    task: 'map',
    instance: 0,
    attempt: 1,
    command: { argv: ['echo', '${task}-${instance}-${attempt}-${job}'], env: { X: '${instance}' }, cwd: '' },
    resource: SLOT,
    ...over,
  };
}

function startReq(plans: PlanInput[], over: Partial<StartWorkersInput> = {}): StartWorkersInput {
  return { appId: 'app1', amAttempt: 1, amAddress: '127.0.0.1:9000', epoch: '0', plans, ...over };
}

const spawns = (effects: Effect[]) => effects.filter((e): e is Extract<Effect, { kind: 'spawn' }> => e.kind === 'spawn');
const kills = (effects: Effect[]) => effects.filter((e): e is Extract<Effect, { kind: 'kill' }> => e.kind === 'kill');
const events = (effects: Effect[]) => effects.filter((e): e is Extract<Effect, { kind: 'event' }> => e.kind === 'event');

/** Grants `slots` of app1/map at seq 1 (epoch 1). */
function withGrant(core: AgentCore, slots: number, seq = '1'): Effect[] {
  return core.updateGrants({ epoch: '1', seq, full: false, grants: [grant('app1', 'map', slots)] }, 0).effects;
}

/** Reports every spawn effect back as spawned with pid 1000+i. */
function spawnAll(core: AgentCore, effects: Effect[], now = 1): Effect[] {
  const out: Effect[] = [];
  for (const s of spawns(effects))
    out.push(...core.workerSpawned(s.worker.appId, s.worker.workerId, 1000 + Number(s.worker.workerId.replace(/\D/g, '') || 0), '12345', now));
  return out;
}

describe('AgentCore', () => {
  it('keeps workers of different apps apart even when their worker ids are equal', () => {
    const core = mockCore();
    core.updateGrants({ epoch: '1', seq: '1', full: true, grants: [grant('app1', 'map', 1), grant('app2', 'map', 1)] }, 0);
    const a = core.startWorkers(startReq([plan('map.0.1')]), 1);
    const b = core.startWorkers(startReq([plan('map.0.1')], { appId: 'app2' }), 2);
    expect(spawns(a.effects)).to.have.length(1);
    expect(spawns(b.effects)).to.have.length(1);
    spawnAll(core, [...a.effects, ...b.effects], 3);
    core.workerExited('app1', 'map.0.1', 0, null, 4);
    expect(core.worker('app1', 'map.0.1')?.state).to.equal('SUCCEEDED');
    expect(core.worker('app2', 'map.0.1')?.state).to.equal('RUNNING');
  });

  describe('grant x plan gating', () => {
    it('starts a plan at once when the grant is already there', () => {
      const core = mockCore();
      withGrant(core, 1);
      const r = core.startWorkers(startReq([plan('w1')]), 10);
      expect(spawns(r.effects)).to.have.length(1);
      expect(r.workers[0]?.state).to.equal('STARTING');
      const ev = spawnAll(core, r.effects, 11);
      expect(core.worker('app1', 'w1')?.state).to.equal('RUNNING');
      expect(core.worker('app1', 'w1')?.pid).to.equal(1001);
      expect(core.worker('app1', 'w1')?.startTime).to.equal('12345');
      expect(events(ev)).to.have.length(1);
      expect(events(ev)[0]?.amAddress).to.equal('127.0.0.1:9000');
      expect(events(ev)[0]?.status.state).to.equal('RUNNING');
    });

    it('keeps a plan that arrives before its grant PENDING and starts it when the grant arrives', () => {
      const core = mockCore();
      const r = core.startWorkers(startReq([plan('w1')]), 10);
      expect(spawns(r.effects)).to.be.empty;
      expect(r.workers[0]?.state).to.equal('PENDING');
      expect(events(r.effects)).to.be.empty;
      const g = withGrant(core, 1);
      expect(spawns(g)).to.have.length(1);
      expect(spawns(g)[0]?.worker.workerId).to.equal('w1');
    });

    it('never starts a plan for an SU of another app or another SU', () => {
      const core = mockCore();
      core.updateGrants({ epoch: '1', seq: '1', full: false, grants: [grant('app2', 'map', 5), grant('app1', 'reduce', 5)] }, 0);
      const r = core.startWorkers(startReq([plan('w1')]), 10);
      expect(spawns(r.effects)).to.be.empty;
    });

    it('starts no more workers than the grant has slots; a finished worker frees its slot', () => {
      const core = mockCore();
      withGrant(core, 2);
      const r = core.startWorkers(startReq([plan('w1', { instance: 1 }), plan('w2', { instance: 2 }), plan('w3', { instance: 3 })]), 10);
      expect(spawns(r.effects).map((s) => s.worker.workerId)).to.deep.equal(['w1', 'w2']);
      expect(core.worker('app1', 'w3')?.state).to.equal('PENDING');
      spawnAll(core, r.effects);
      // STARTING / RUNNING both hold their slot.
      expect(spawns(core.tick(20))).to.be.empty;
      const exit = core.workerExited('app1', 'w1', 0, null, 30);
      expect(core.worker('app1', 'w1')?.state).to.equal('SUCCEEDED');
      expect(spawns(exit).map((s) => s.worker.workerId)).to.deep.equal(['w3']);
    });

    it('starts a plan on a slot returned and placed here again only from the grant table that holds it', () => {
      // The AM's slot ended (w1), the AM returned it (table 2: 0 slots) and the master placed it here
      // again (table 3: 1 slot). The AM saw both and planned w2 on table 3; this agent is still on
      // table 1, whose room is the returned slot.
      const core = mockCore();
      withGrant(core, 1);
      spawnAll(core, core.startWorkers(startReq([plan('w1')]), 10).effects);
      core.workerExited('app1', 'w1', 1, null, 20);
      const r = core.startWorkers(startReq([plan('w2', { attempt: 2, grantTable: { epoch: '1', seq: '3' } })]), 30);
      expect(spawns(r.effects)).to.be.empty;
      expect(core.worker('app1', 'w2')?.state).to.equal('PENDING');
      const returned = core.updateGrants({ epoch: '1', seq: '2', full: false, grants: [grant('app1', 'map', 0)] }, 40).effects;
      expect(kills(returned)).to.be.empty;
      expect(core.worker('app1', 'w2')?.state).to.equal('PENDING');
      const placed = core.updateGrants({ epoch: '1', seq: '3', full: false, grants: [grant('app1', 'map', 1)] }, 50).effects;
      expect(spawns(placed).map((s) => s.worker.workerId)).to.deep.equal(['w2']);
    });

    it('starts a plan whose grant table is of an older master on any table of a newer one', () => {
      const core = mockCore();
      core.updateGrants({ epoch: '2', seq: '1', full: true, grants: [grant('app1', 'map', 1)] }, 0);
      const r = core.startWorkers(startReq([plan('w1', { grantTable: { epoch: '1', seq: '9' } })]), 10);
      expect(spawns(r.effects)).to.have.length(1);
      const ahead = core.startWorkers(startReq([plan('w2', { instance: 1, grantTable: { epoch: '3', seq: '1' } })]), 11);
      expect(core.worker('app1', 'w2')?.state).to.equal('PENDING');
      expect(spawns(ahead.effects)).to.be.empty;
    });

    it('counts a STARTING worker (spawn not yet reported) against the grant', () => {
      const core = mockCore();
      withGrant(core, 1);
      core.startWorkers(startReq([plan('w1')]), 10);
      const r = core.startWorkers(startReq([plan('w2')]), 11);
      expect(spawns(r.effects)).to.be.empty;
      expect(core.worker('app1', 'w2')?.state).to.equal('PENDING');
    });

    it('substitutes ${...} in argv and env and adds the FUXI_* environment', () => {
      const core = mockCore();
      withGrant(core, 1);
      const r = core.startWorkers(startReq([plan('w1', { instance: 4, attempt: 2 })], { amAttempt: 3 }), 10);
      const w = spawns(r.effects)[0]?.worker;
      expect(w?.argv).to.deep.equal(['echo', 'map-4-2-app1']);
      expect(w?.env).to.include({
        X: '4',
        FUXI_APP_ID: 'app1',
        FUXI_TASK: 'map',
        FUXI_INSTANCE: '4',
        FUXI_ATTEMPT: '2',
        FUXI_WORKER_ID: 'w1',
        FUXI_NODE_ID: 'n1',
        FUXI_AM_ATTEMPT: '3',
      });
    });

    it('rejects a plan with an empty command and a plan larger than its granted slot', () => {
      const core = mockCore();
      withGrant(core, 2);
      const r = core.startWorkers(startReq([plan('w1', { command: { argv: [], env: {}, cwd: '' } }), plan('w2', { resource: res(2000, 1024) })]), 10);
      expect(core.worker('app1', 'w1')?.state).to.equal('REJECTED');
      expect(core.worker('app1', 'w2')?.state).to.equal('REJECTED');
      expect(core.worker('app1', 'w2')?.message).to.match(/exceeds the granted slot/);
      expect(events(r.effects).map((e) => e.status.workerId)).to.deep.equal(['w1', 'w2']);
      expect(spawns(r.effects)).to.be.empty;
    });

    it('accounts a worker with the grant resource', () => {
      const core = mockCore();
      withGrant(core, 1);
      core.startWorkers(startReq([plan('w1', { resource: res(0, 0) })]), 10);
      expect(core.used()).to.deep.equal(SLOT);
    });
  });

  describe('over-commit safety net', () => {
    it('refuses to start a worker that would exceed node capacity, and logs an error', () => {
      const core = mockCore({ capacity: res(1500, 4096) });
      withGrant(core, 2); // the master over-committed: 2 x 1000m on a 1500m node
      const r = core.startWorkers(startReq([plan('w1'), plan('w2')]), 10);
      expect(spawns(r.effects)).to.have.length(1);
      expect(core.worker('app1', 'w2')?.state).to.equal('PENDING');
      const errs = r.effects.filter((e) => e.kind === 'log' && e.level === 'error');
      expect(errs).to.have.length(1);
      expect(core.used()).to.deep.equal(SLOT);
      // Said once per plan, however often the plans are looked at again.
      const again = withGrant(core, 2, '2');
      expect(again.filter((e) => e.kind === 'log' && e.level === 'error')).to.be.empty;
      expect(core.worker('app1', 'w2')?.state).to.equal('PENDING');
    });

    it('holds a plan while stopping workers hold the room the master gave it, and starts it when they end', () => {
      // 8 slots: app1 holds 7 and app0 1; the master revokes app0's slot (its job ended) and gives it to app1.
      const core = mockCore();
      core.updateGrants({ epoch: '1', seq: '1', full: true, grants: [grant('app0', 'map', 1), grant('app1', 'map', 7)] }, 0);
      spawnAll(core, core.startWorkers(startReq([plan('old')], { appId: 'app0' }), 1).effects, 2);
      spawnAll(core, core.startWorkers(startReq([1, 2, 3, 4, 5, 6, 7].map((i) => plan(`w${i}`))), 3).effects, 4);
      const revoke = core.updateGrants({ epoch: '1', seq: '2', full: true, grants: [grant('app1', 'map', 8)] }, 5).effects;
      expect(kills(revoke).map((k) => k.workerId)).to.deep.equal(['old']);
      const r = core.startWorkers(startReq([plan('w8')]), 6);
      expect(spawns(r.effects)).to.be.empty;
      expect(core.worker('app1', 'w8')?.state).to.equal('PENDING');
      const logs = r.effects.filter((e): e is Extract<Effect, { kind: 'log' }> => e.kind === 'log' && e.level !== 'debug');
      expect(logs.map((l) => [l.level, l.msg])).to.deep.equal([['info', 'worker waits for stopping workers to free the node']]);
      expect(logs[0]?.fields).to.include({ stopping: 1, appId: 'app1', workerId: 'w8' });
      const ended = core.workerExited('app0', 'old', null, 'SIGTERM', 7);
      expect(spawns(ended).map((s) => s.worker.workerId)).to.deep.equal(['w8']);
    });
  });

  describe('grant deltas with a base', () => {
    it('applies a delta only on its base table, with the numbers between skipped; 0 slots revokes', () => {
      const core = mockCore();
      core.updateGrants({ epoch: '1', seq: '4', full: true, grants: [grant('app1', 'map', 2), grant('app2', 'map', 1)] }, 0);
      spawnAll(core, core.startWorkers(startReq([plan('w1')], { appId: 'app2' }), 1).effects, 2);
      // Made against table 3: ignored (an entry that changed from 3 to 4 would stay as it was).
      const wrongBase = core.updateGrants({ epoch: '1', seq: '6', full: false, baseSeq: '3', grants: [grant('app1', 'map', 5)] }, 3);
      expect(wrongBase.applied).to.equal(false);
      expect(core.snapshot().grants.find((g) => g.appId === 'app1')?.slots).to.equal(2);
      const r = core.updateGrants({ epoch: '1', seq: '6', full: false, baseSeq: '4', grants: [grant('app1', 'map', 5), grant('app2', 'map', 0)] }, 4);
      expect(r.applied).to.equal(true);
      expect(r.appliedSeq).to.equal('6');
      expect(core.snapshot().grants.map((g) => [g.appId, g.slots])).to.deep.equal([['app1', 5]]);
      expect(kills(r.effects).map((k) => [k.appId, k.workerId])).to.deep.equal([['app2', 'w1']]);
    });
  });

  describe('grant shrink', () => {
    it('kills the newest excess workers when a grant shrinks', () => {
      const core = mockCore();
      withGrant(core, 3);
      const r = core.startWorkers(startReq([plan('w1'), plan('w2'), plan('w3')]), 10);
      spawnAll(core, r.effects);
      const g = core.updateGrants({ epoch: '1', seq: '2', full: false, grants: [grant('app1', 'map', 1)] }, 20).effects;
      expect(kills(g).map((k) => k.workerId)).to.deep.equal(['w3', 'w2']);
      expect(kills(g).map((k) => k.pid)).to.deep.equal([1003, 1002]);
      // Still running until they exit; a second shrink message kills no one again.
      const again = core.updateGrants({ epoch: '1', seq: '3', full: false, grants: [grant('app1', 'map', 1)] }, 21).effects;
      expect(kills(again)).to.be.empty;
      const ex = core.workerExited('app1', 'w3', null, 'SIGTERM', 22);
      expect(core.worker('app1', 'w3')?.state).to.equal('KILLED');
      expect(core.worker('app1', 'w3')?.signal).to.equal('SIGTERM');
      expect(events(ex)[0]?.status.state).to.equal('KILLED');
    });

    it('kills every worker of a revoked grant (full table without it)', () => {
      const core = mockCore();
      withGrant(core, 2);
      spawnAll(core, core.startWorkers(startReq([plan('w1'), plan('w2')]), 10).effects);
      const g = core.updateGrants({ epoch: '1', seq: '5', full: true, grants: [] }, 20).effects;
      expect(kills(g)).to.have.length(2);
      expect(core.grantTable()).to.be.empty;
    });

    it('kills a worker whose spawn is still being reported as soon as its pid is known', () => {
      const core = mockCore();
      withGrant(core, 1);
      const r = core.startWorkers(startReq([plan('w1')]), 10);
      const g = core.updateGrants({ epoch: '1', seq: '2', full: false, grants: [grant('app1', 'map', 0)] }, 11).effects;
      expect(kills(g)).to.be.empty;
      const s = spawnAll(core, r.effects, 12);
      expect(kills(s).map((k) => k.workerId)).to.deep.equal(['w1']);
    });
  });

  describe('fencing', () => {
    it('rejects master commands with a stale epoch', () => {
      const core = mockCore();
      core.updateGrants({ epoch: '5', seq: '1', full: true, grants: [] }, 0);
      expect(() => core.updateGrants({ epoch: '4', seq: '2', full: false, grants: [] }, 1)).to.throw(StaleEpochError);
      expect(() => core.stopWorkers({ appId: 'app1', workerIds: [], amAttempt: 0, epoch: '4', reason: '' }, 1)).to.throw(StaleEpochError);
      expect(() => core.startWorkers(startReq([plan('am', { suId: AM_SU })], { epoch: '4', amAddress: '' }), 1)).to.throw(StaleEpochError);
      expect(() => core.registered('3')).to.throw(StaleEpochError);
      // A newer epoch raises the bar.
      core.registered('7');
      expect(core.epochSeen).to.equal('7');
      expect(() => core.updateGrants({ epoch: '5', seq: '2', full: false, grants: [] }, 1)).to.throw(FailedPreconditionError, /stale epoch/);
    });

    it('rejects plans and stops from an AM attempt older than the newest seen for the app', () => {
      const core = mockCore();
      withGrant(core, 5);
      core.startWorkers(startReq([plan('w1')], { amAttempt: 2 }), 10);
      expect(() => core.startWorkers(startReq([plan('w2')], { amAttempt: 1 }), 11)).to.throw(StaleEpochError, /am attempt/);
      expect(() => core.stopWorkers({ appId: 'app1', workerIds: ['w1'], amAttempt: 1, epoch: '0', reason: '' }, 11)).to.throw(StaleEpochError);
      expect(core.worker('app1', 'w2')).to.equal(undefined);
      // A newer attempt raises the bar and takes over the AM address.
      const r = core.startWorkers(startReq([plan('w3')], { amAttempt: 3, amAddress: '127.0.0.1:9333' }), 12);
      expect(spawns(r.effects)).to.have.length(1);
      expect(() => core.startWorkers(startReq([plan('w4')], { amAttempt: 2 }), 13)).to.throw(StaleEpochError);
      // Events of the old attempt's workers go to the new AM.
      const ev = core.workerSpawned('app1', 'w1', 77, '1', 14);
      expect(events(ev)[0]?.amAddress).to.equal('127.0.0.1:9333');
      // Other apps are unaffected.
      expect(() => core.startWorkers(startReq([plan('x1')], { appId: 'app2', amAttempt: 1 }), 15)).to.not.throw();
    });

    it('the master starts only AM processes; an AM never does', () => {
      const core = mockCore();
      expect(() => core.startWorkers(startReq([plan('w1')], { epoch: '1' }), 1)).to.throw(InvalidArgumentError, /plans\[0\]\.suId/);
      expect(() => core.startWorkers(startReq([plan('am1', { suId: AM_SU })]), 1)).to.throw(InvalidArgumentError, /reserved/);
      core.updateGrants({ epoch: '1', seq: '1', full: true, grants: [grant('app1', AM_SU, 1)] }, 0);
      const r = core.startWorkers({ appId: 'app1', amAttempt: 1, amAddress: '', epoch: '1', plans: [plan('am1', { suId: AM_SU, task: AM_SU })] }, 2);
      expect(spawns(r.effects)).to.have.length(1);
      const ev = spawnAll(core, r.effects, 3);
      expect(events(ev)).to.be.empty; // the master learns about AMs from heartbeats
      expect(core.amWorkers().map((w) => [w.workerId, w.state])).to.deep.equal([['am1', 'RUNNING']]);
      // An AM cannot stop its AM process; the master can.
      const s1 = core.stopWorkers({ appId: 'app1', workerIds: [], amAttempt: 1, epoch: '0', reason: '' }, 4);
      expect(kills(s1.effects)).to.be.empty;
      const s2 = core.stopWorkers({ appId: 'app1', workerIds: [], amAttempt: 0, epoch: '1', reason: 'job killed' }, 4);
      expect(kills(s2.effects).map((k) => k.workerId)).to.deep.equal(['am1']);
      const ex = core.workerExited('app1', 'am1', null, 'SIGTERM', 5);
      expect(events(ex)).to.be.empty;
      expect(core.amWorkers()[0]?.state).to.equal('KILLED');
      expect(core.amWorkers()[0]?.message).to.equal('job killed');
    });
  });

  describe('AM processes in heartbeats', () => {
    it('reports every AM not ended, and an ended one only while its app still holds a grant here', () => {
      const core = mockCore();
      core.updateGrants({ epoch: '1', seq: '1', full: true, grants: [grant('app1', AM_SU, 1), grant('app2', AM_SU, 1)] }, 0);
      for (const app of ['app1', 'app2']) {
        const r = core.startWorkers({ appId: app, amAttempt: 1, amAddress: '', epoch: '1', plans: [plan('am.1', { suId: AM_SU, task: AM_SU })] }, 1);
        spawnAll(core, r.effects, 2);
      }
      const reported = () => core.amWorkersToReport().map((w) => `${w.appId}:${w.state}`);
      expect(reported()).to.deep.equal(['app1:RUNNING', 'app2:RUNNING']);
      // app1's AM crashes: reported ended while the master has not let its slot go.
      core.workerExited('app1', 'am.1', 1, null, 3);
      expect(reported()).to.deep.equal(['app1:FAILED', 'app2:RUNNING']);
      // app2's job ended: the master released its slot, then its AM was stopped.
      core.updateGrants({ epoch: '1', seq: '2', full: false, grants: [grant('app2', AM_SU, 0)] }, 4);
      core.workerExited('app2', 'am.1', null, 'SIGTERM', 5);
      expect(reported()).to.deep.equal(['app1:FAILED']);
      // The master moved app1 on (its slot released): nothing left to report; the registry keeps both.
      core.updateGrants({ epoch: '1', seq: '3', full: false, grants: [grant('app1', AM_SU, 0)] }, 6);
      expect(reported()).to.deep.equal([]);
      expect(core.amWorkers()).to.have.length(2);
    });

    it('asks for a heartbeat now when an AM fails, not when it is stopped or a task worker fails', () => {
      const core = mockCore();
      core.updateGrants({ epoch: '1', seq: '1', full: true, grants: [grant('app1', AM_SU, 1), grant('app2', AM_SU, 1), grant('app3', 'map', 1)] }, 0);
      for (const app of ['app1', 'app2']) {
        const r = core.startWorkers({ appId: app, amAttempt: 1, amAddress: '', epoch: '1', plans: [plan('am.1', { suId: AM_SU, task: AM_SU })] }, 1);
        spawnAll(core, r.effects, 2);
      }
      spawnAll(core, core.startWorkers(startReq([plan('w1')], { appId: 'app3' }), 1).effects, 2);
      const tells = (effects: Effect[]) => effects.filter((e) => e.kind === 'tellMaster');
      // A task worker's failure goes to its AM, not to the master.
      expect(tells(core.workerExited('app3', 'w1', 1, null, 3))).to.be.empty;
      // An AM killed from outside (its host died, say): the master restarts it once it knows.
      expect(tells(core.workerExited('app1', 'am.1', null, 'SIGKILL', 3))).to.deep.equal([{ kind: 'tellMaster', why: 'an application master failed' }]);
      // An AM stopped on request: the master (or the agent, for the master) asked for it.
      core.stopWorkers({ appId: 'app2', workerIds: [], amAttempt: 0, epoch: '1', reason: 'job killed' }, 4);
      expect(tells(core.workerExited('app2', 'am.1', null, 'SIGTERM', 5))).to.be.empty;
    });
  });

  describe('grant sequence numbers', () => {
    it('ignores a delta with a seq gap, then a full table heals', () => {
      const core = mockCore();
      withGrant(core, 1, '1');
      const gap = core.updateGrants({ epoch: '1', seq: '3', full: false, grants: [grant('app1', 'map', 4)] }, 1);
      expect(gap.applied).to.equal(false);
      expect(gap.appliedSeq).to.equal('1');
      expect(core.grantTable()[0]?.slots).to.equal(1);
      const dup = core.updateGrants({ epoch: '1', seq: '1', full: false, grants: [grant('app1', 'map', 4)] }, 1);
      expect(dup.applied).to.equal(false);
      const full = core.updateGrants({ epoch: '1', seq: '3', full: true, grants: [grant('app1', 'reduce', 2)] }, 2);
      expect(full.applied).to.equal(true);
      expect(full.appliedSeq).to.equal('3');
      expect(core.grantTable()).to.deep.equal([grant('app1', 'reduce', 2)]);
      const next = core.updateGrants({ epoch: '1', seq: '4', full: false, grants: [grant('app1', 'map', 1)] }, 3);
      expect(next.applied).to.equal(true);
      expect(core.appliedGrantSeq).to.equal('4');
      expect(core.grantTable()).to.have.length(2);
    });

    it('a delta with 0 slots revokes that entry only', () => {
      const core = mockCore();
      core.updateGrants({ epoch: '1', seq: '1', full: true, grants: [grant('app1', 'map', 1), grant('app1', 'reduce', 1)] }, 0);
      core.updateGrants({ epoch: '1', seq: '2', full: false, grants: [grant('app1', 'map', 0)] }, 0);
      expect(core.grantTable().map((g) => g.suId)).to.deep.equal(['reduce']);
    });

    it('rejects a malformed grant', () => {
      const core = mockCore();
      expect(() => core.updateGrants({ epoch: '1', seq: '1', full: true, grants: [grant('app1', 'map', -1)] }, 0)).to.throw(
        InvalidArgumentError,
        /grants\[0\]\.slots/,
      );
    });
  });

  describe('master failover: (epoch, seq) order of grant messages', () => {
    /** A running worker of app1/map under a 2-slot grant from master epoch 1, grant seq 57. */
    function runningUnderOldMaster(): AgentCore {
      const core = mockCore();
      core.registered('1');
      core.updateGrants({ epoch: '1', seq: '57', full: true, grants: [grant('app1', 'map', 2)] }, 0);
      spawnAll(core, core.startWorkers(startReq([plan('w1')]), 1).effects, 2);
      expect(core.worker('app1', 'w1')?.state).to.equal('RUNNING');
      return core;
    }

    it('a newer epoch raises the bar without touching grants or workers; an older one is refused', () => {
      const core = runningUnderOldMaster();
      expect(core.registered('4')).to.deep.equal([]);
      expect(core.epochSeen).to.equal('4');
      expect(core.grantTable()).to.deep.equal([grant('app1', 'map', 2)]);
      expect(core.worker('app1', 'w1')?.state).to.equal('RUNNING');
      // The table still comes from epoch 1: heartbeats report seq 0 of epoch 4.
      expect(core.appliedGrantSeq).to.equal('57');
      expect(core.appliedGrantEpoch).to.equal('1');
      expect(core.currentGrantSeq).to.equal('0');
      expect(() => core.registered('3')).to.throw(StaleEpochError);
      expect(core.epochSeen).to.equal('4');
      expect(() => core.updateGrants({ epoch: '1', seq: '58', full: true, grants: [] }, 3)).to.throw(StaleEpochError);
      expect(core.grantTable()).to.deep.equal([grant('app1', 'map', 2)]);
    });

    it('applies a full table from a new epoch although its seq is below the applied one (bar already raised)', () => {
      const core = runningUnderOldMaster();
      core.registered('2'); // RegisterAgent with the new leader came first
      const r = core.updateGrants({ epoch: '2', seq: '1', full: true, grants: [grant('app1', 'map', 2), grant('app2', 'reduce', 1)] }, 5);
      expect(r.applied).to.equal(true);
      expect(r.appliedSeq).to.equal('1');
      expect(kills(r.effects)).to.be.empty;
      expect(core.grantTable().map((g) => [g.appId, g.slots])).to.deep.equal([
        ['app1', 2],
        ['app2', 1],
      ]);
      expect([core.appliedGrantEpoch, core.appliedGrantSeq, core.currentGrantSeq]).to.deep.equal(['2', '1', '1']);
      expect(core.worker('app1', 'w1')?.state).to.equal('RUNNING');
    });

    it('applies a full table from a new epoch that arrives before any registration with it', () => {
      const core = runningUnderOldMaster();
      const r = core.updateGrants({ epoch: '3', seq: '2', full: true, grants: [grant('app1', 'map', 2)] }, 5);
      expect(r.applied).to.equal(true);
      expect(core.epochSeen).to.equal('3');
      expect([core.appliedGrantEpoch, core.appliedGrantSeq]).to.deep.equal(['3', '2']);
    });

    it('keeps ignoring an older full table from the same master, also after a failover', () => {
      const core = runningUnderOldMaster();
      const old = core.updateGrants({ epoch: '1', seq: '56', full: true, grants: [] }, 3);
      expect(old.applied).to.equal(false);
      expect(old.appliedSeq).to.equal('57');
      expect(core.worker('app1', 'w1')?.stopReason).to.equal('');
      core.updateGrants({ epoch: '2', seq: '5', full: true, grants: [grant('app1', 'map', 2)] }, 4);
      const stale = core.updateGrants({ epoch: '2', seq: '4', full: true, grants: [] }, 5);
      expect(stale.applied).to.equal(false);
      expect(kills(stale.effects)).to.be.empty;
      expect(core.grantTable()).to.have.length(1);
      // Same seq again (a repeated delivery) is harmless and applies.
      expect(core.updateGrants({ epoch: '2', seq: '5', full: true, grants: [grant('app1', 'map', 2)] }, 6).applied).to.equal(true);
    });

    it('counts deltas of a new master from its own seq 1', () => {
      const core = runningUnderOldMaster();
      core.registered('2');
      const gap = core.updateGrants({ epoch: '2', seq: '2', full: false, grants: [grant('app1', 'map', 3)] }, 3);
      expect(gap.applied).to.equal(false);
      expect(gap.appliedSeq).to.equal('0');
      const first = core.updateGrants({ epoch: '2', seq: '1', full: false, grants: [grant('app1', 'map', 3)] }, 4);
      expect(first.applied).to.equal(true);
      expect(core.grantTable()).to.deep.equal([grant('app1', 'map', 3)]);
      expect(core.updateGrants({ epoch: '2', seq: '2', full: false, grants: [grant('app2', 'x', 1)] }, 5).applied).to.equal(true);
      expect(core.currentGrantSeq).to.equal('2');
      // A delta continuing the old master's numbering is not mistaken for the new one's.
      const core2 = runningUnderOldMaster();
      expect(core2.updateGrants({ epoch: '2', seq: '58', full: false, grants: [] }, 3).applied).to.equal(false);
      expect(core2.grantTable()).to.have.length(1);
    });
  });

  describe('pending timeout', () => {
    it('rejects a plan that found no grant within pendingTimeoutMs', () => {
      const core = mockCore({ pendingTimeoutMs: 1000 });
      core.startWorkers(startReq([plan('w1')]), 100);
      expect(events(core.tick(1099))).to.be.empty;
      const t = core.tick(1100);
      expect(core.worker('app1', 'w1')?.state).to.equal('REJECTED');
      expect(core.worker('app1', 'w1')?.message).to.match(/no grant/);
      expect(events(t)[0]?.status.state).to.equal('REJECTED');
      // A late grant does not resurrect it.
      expect(spawns(withGrant(core, 1))).to.be.empty;
    });

    it('says so when the grant exists but has no room', () => {
      const core = mockCore({ pendingTimeoutMs: 1000 });
      withGrant(core, 1);
      core.startWorkers(startReq([plan('w1'), plan('w2')]), 0);
      core.tick(1000);
      expect(core.worker('app1', 'w1')?.state).to.equal('STARTING');
      expect(core.worker('app1', 'w2')?.state).to.equal('REJECTED');
      expect(core.worker('app1', 'w2')?.message).to.match(/no room/);
    });

    it('says which grant table it waited for when the grant has room but that table never came', () => {
      const core = mockCore({ pendingTimeoutMs: 1000 });
      withGrant(core, 1);
      core.startWorkers(startReq([plan('w1', { grantTable: { epoch: '1', seq: '4' } })]), 0);
      core.tick(1000);
      expect(core.worker('app1', 'w1')?.state).to.equal('REJECTED');
      expect(core.worker('app1', 'w1')?.message).to.match(
        /grant table holding its slot \(seq 4 of master epoch 1\) never arrived; this agent is at seq 1 of epoch 1/,
      );
    });

    describe('cut off from the masters', () => {
      it('rejects a plan with no grant after three heartbeat intervals without an answer', () => {
        const core = mockCore();
        core.masterHeard(0, 300); // three intervals: 900 ms, at least 1 s
        core.startWorkers(startReq([plan('w1')]), 100);
        expect(events(core.tick(1000))).to.be.empty; // waited 900 ms
        const t = core.tick(1100);
        expect(core.worker('app1', 'w1')?.state).to.equal('REJECTED');
        expect(core.worker('app1', 'w1')?.message).to.match(/no master answered for 1\.1s/);
        expect(events(t)[0]?.status.state).to.equal('REJECTED');
      });

      it('waits the full pendingTimeoutMs while the masters answer (the grant may just be late)', () => {
        const core = mockCore({ pendingTimeoutMs: 60_000 });
        core.masterHeard(0, 300);
        core.startWorkers(startReq([plan('w1')]), 0);
        for (let t = 500; t < 30_000; t += 500) {
          core.masterHeard(t - 100, 300);
          expect(events(core.tick(t))).to.be.empty;
        }
        expect(core.worker('app1', 'w1')?.state).to.equal('PENDING');
        expect(spawns(withGrant(core, 1))).to.have.length(1);
      });

      it('does not reject a plan whose grant is there but full, nor one that has just arrived', () => {
        const core = mockCore({ pendingTimeoutMs: 60_000 });
        core.masterHeard(0, 1000); // 3 s
        withGrant(core, 1);
        core.startWorkers(startReq([plan('w1'), plan('w2')]), 0);
        core.startWorkers(startReq([plan('w3', { suId: 'reduce' })]), 9_000);
        core.tick(10_000);
        expect(core.worker('app1', 'w2')?.state).to.equal('PENDING'); // its grant has no room: it may free up
        expect(core.worker('app1', 'w3')?.state).to.equal('PENDING'); // waited 1 s only
        core.tick(12_000);
        expect(core.worker('app1', 'w3')?.state).to.equal('REJECTED');
        expect(core.worker('app1', 'w2')?.state).to.equal('PENDING');
      });

      it('counts silence from the first tick when no master has answered yet', () => {
        const core = mockCore();
        core.startWorkers(startReq([plan('w1')]), 0);
        expect(events(core.tick(5_000))).to.be.empty; // silence starts now
        expect(events(core.tick(7_999))).to.be.empty;
        core.tick(8_000);
        expect(core.worker('app1', 'w1')?.state).to.equal('REJECTED');
      });
    });
  });

  describe('idempotency and stop', () => {
    it('returns the current status for a duplicate plan and starts nothing twice', () => {
      const core = mockCore();
      withGrant(core, 2);
      const a = core.startWorkers(startReq([plan('w1')]), 10);
      spawnAll(core, a.effects);
      const b = core.startWorkers(startReq([plan('w1')]), 11);
      expect(spawns(b.effects)).to.be.empty;
      expect(b.workers).to.have.length(1);
      expect(b.workers[0]?.state).to.equal('RUNNING');
      expect(b.workers[0]?.pid).to.equal(1001);
      expect(core.summary().running).to.equal(1);
    });

    it('stops pending workers without a process and running ones with a kill', () => {
      const core = mockCore();
      withGrant(core, 1);
      const a = core.startWorkers(startReq([plan('w1'), plan('w2')]), 10);
      spawnAll(core, a.effects);
      const s = core.stopWorkers({ appId: 'app1', workerIds: ['w1', 'w2', 'nope'], amAttempt: 1, epoch: '0', reason: 'speculation lost' }, 20);
      expect(s.workers.map((w) => w.workerId)).to.deep.equal(['w1', 'w2']);
      expect(kills(s.effects).map((k) => k.workerId)).to.deep.equal(['w1']);
      expect(core.worker('app1', 'w2')?.state).to.equal('KILLED');
      const ex = core.workerExited('app1', 'w1', 0, null, 21);
      expect(core.worker('app1', 'w1')?.state).to.equal('KILLED');
      expect(core.worker('app1', 'w1')?.message).to.equal('speculation lost');
      expect(events(ex)).to.have.length(1);
    });

    it('keeps worker ends for the next heartbeat until a master has them', () => {
      const core = mockCore();
      withGrant(core, 3);
      spawnAll(core, core.startWorkers(startReq([plan('w1'), plan('w2'), plan('w3')]), 10).effects);
      core.workerExited('app1', 'w1', 0, null, 20);
      core.workerExited('app1', 'w2', 3, null, 21);
      const sent = core.workerEnds();
      expect(sent.map((w) => [w.workerId, w.state, w.exitCode, w.finishedAtMs])).to.deep.equal([
        ['w1', 'SUCCEEDED', 0, 20],
        ['w2', 'FAILED', 3, 21],
      ]);
      core.workerExited('app1', 'w3', null, 'SIGKILL', 22); // ends while the heartbeat is in flight
      core.workerEndsReported(sent.length);
      expect(core.workerEnds().map((w) => [w.workerId, w.signal])).to.deep.equal([['w3', 'SIGKILL']]);
    });

    it('lists its running task workers for the heartbeat (failure prediction weighs them), not the ended ones', () => {
      const core = mockCore();
      withGrant(core, 3);
      spawnAll(core, core.startWorkers(startReq([plan('w1'), plan('w2'), plan('w3')]), 10).effects);
      core.workerExited('app1', 'w2', 1, null, 20);
      expect(core.runningTaskWorkers().map((w) => [w.workerId, w.appId])).to.deep.equal([
        ['w1', 'app1'],
        ['w3', 'app1'],
      ]);
    });

    it('maps exits to SUCCEEDED / FAILED with a message', () => {
      const core = mockCore();
      withGrant(core, 3);
      spawnAll(core, core.startWorkers(startReq([plan('w1'), plan('w2'), plan('w3')]), 10).effects);
      core.workerExited('app1', 'w1', 0, null, 20);
      core.workerExited('app1', 'w2', 3, null, 20);
      core.workerExited('app1', 'w3', null, 'SIGSEGV', 20);
      expect(core.worker('app1', 'w1')?.state).to.equal('SUCCEEDED');
      expect(core.worker('app1', 'w2')?.state).to.equal('FAILED');
      expect(core.worker('app1', 'w2')?.exitCode).to.equal(3);
      expect(core.worker('app1', 'w2')?.message).to.equal('exit code 3');
      expect(core.worker('app1', 'w3')?.state).to.equal('FAILED');
      expect(core.worker('app1', 'w3')?.message).to.match(/SIGSEGV/);
      expect(core.worker('app1', 'w3')?.finishedAtMs).to.equal(20);
    });

    it('handles an exit reported before the spawn', () => {
      const core = mockCore();
      withGrant(core, 1);
      core.startWorkers(startReq([plan('w1')]), 10);
      core.workerExited('app1', 'w1', 0, null, 11);
      expect(core.worker('app1', 'w1')?.state).to.equal('SUCCEEDED');
      expect(core.workerSpawned('app1', 'w1', 55, '9', 12)).to.be.empty;
      expect(core.worker('app1', 'w1')?.pid).to.equal(55);
      expect(core.worker('app1', 'w1')?.state).to.equal('SUCCEEDED');
    });

    it('rejects a worker whose spawn failed and frees its slot', () => {
      const core = mockCore();
      withGrant(core, 1);
      core.startWorkers(startReq([plan('w1'), plan('w2')]), 10);
      const f = core.spawnFailed('app1', 'w1', 'ENOENT', 11);
      expect(core.worker('app1', 'w1')?.state).to.equal('REJECTED');
      expect(core.worker('app1', 'w1')?.message).to.match(/ENOENT/);
      expect(spawns(f).map((s) => s.worker.workerId)).to.deep.equal(['w2']);
    });
  });

  describe('queries', () => {
    it('summary() and used() count running, pending and finished workers', () => {
      const core = mockCore();
      withGrant(core, 2);
      const a = core.startWorkers(startReq([plan('w1', { instance: 1 }), plan('w2', { instance: 2 }), plan('w3', { instance: 3 })]), 10);
      spawnAll(core, a.effects);
      expect(core.summary()).to.deep.equal({ running: 2, pending: 1, finished: 0 });
      expect(core.used()).to.deep.equal(res(2000, 2048));
      core.workerExited('app1', 'w1', 0, null, 20);
      expect(core.summary()).to.deep.equal({ running: 2, pending: 0, finished: 1 });
      core.workerExited('app1', 'w2', 1, null, 21);
      core.workerExited('app1', 'w3', 1, null, 21);
      expect(core.summary()).to.deep.equal({ running: 0, pending: 0, finished: 3 });
      expect(core.used()).to.deep.equal(res(0, 0));
    });

    it('findWorker() picks the given attempt or the latest one', () => {
      const core = mockCore();
      withGrant(core, 3);
      core.startWorkers(startReq([plan('a1', { instance: 7, attempt: 1 }), plan('a2', { instance: 7, attempt: 2 }), plan('b1', { instance: 8 })]), 10);
      expect(core.findWorker('app1', 'map', 7)?.workerId).to.equal('a2');
      expect(core.findWorker('app1', 'map', 7, 1)?.workerId).to.equal('a1');
      expect(core.findWorker('app1', 'map', 9)).to.equal(undefined);
    });

    it('snapshot() holds grants, workers, epoch and seq; finished workers are forgotten after retention', () => {
      const core = new AgentCore({ nodeId: 'n1', capacity: res(8000, 16384), finishedRetentionMs: 1000 });
      withGrant(core, 1);
      spawnAll(core, core.startWorkers(startReq([plan('w1')]), 10).effects);
      const s = core.snapshot();
      expect(s.epoch).to.equal('1');
      expect(s.grantEpoch).to.equal('1');
      expect(s.grantSeq).to.equal('1');
      expect(s.grants).to.have.length(1);
      expect(s.workers.map((w) => w.state)).to.deep.equal(['RUNNING']);
      expect(s.used).to.deep.equal(SLOT);
      core.workerExited('app1', 'w1', 0, null, 100);
      core.tick(1000);
      expect(core.listWorkers()).to.have.length(1);
      core.tick(1101);
      expect(core.listWorkers()).to.be.empty;
    });
  });
});
