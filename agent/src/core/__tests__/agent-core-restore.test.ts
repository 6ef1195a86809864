/**
 * The agent core across a restart: the checkpoint deltas it hands out, restoring from a checkpointed
 * state (re-adopting live workers, finishing ended ones with their exit codes, keeping pending
 * plans pending until the grant table is confirmed), and the AM attempt bar carried by grants.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { FailedPreconditionError, res, StaleEpochError, type Resource } from '@fuxi/common';
import { AM_SU } from '@fuxi/common';
import {
  AgentCore,
  ENDED_WHILE_DOWN,
  type AgentState,
  type Effect,
  type GrantEntry,
  type Liveness,
  type PlanInput,
  type StartWorkersInput,
  type WorkerInfo,
} from '../agent-core.js';
import { applyDelta, emptyState, isEmptyState, mergeDeltas } from '../state-delta.js';

// ---------------------------------------------------------------- factories

const SLOT = res(1000, 1024);

function mockCore(over: { nodeId?: string; capacity?: Resource; finishedRetentionMs?: number; resendFinishedWithinMs?: number } = {}): AgentCore {
  return new AgentCore({ nodeId: over.nodeId ?? 'n1', capacity: over.capacity ?? res(8000, 16384), pendingTimeoutMs: 60_000, ...over });
}

function grant(appId: string, suId: string, slots: number, amAttempt = 0, resource: Resource = SLOT): GrantEntry {
  return { appId, suId, slots, resource, amAttempt };
}

function plan(workerId: string, over: Partial<PlanInput> = {}): PlanInput {
  return { workerId, suId: 'map', task: 'map', instance: 0, attempt: 1, command: { argv: ['sleep', '30'], env: {}, cwd: '' }, resource: SLOT, ...over };
}

function startReq(plans: PlanInput[], over: Partial<StartWorkersInput> = {}): StartWorkersInput {
  return { appId: 'app1', amAttempt: 1, amAddress: '127.0.0.1:9000', epoch: '0', plans, ...over };
}

const spawns = (effects: Effect[]) => effects.filter((e): e is Extract<Effect, { kind: 'spawn' }> => e.kind === 'spawn');
const kills = (effects: Effect[]) => effects.filter((e): e is Extract<Effect, { kind: 'kill' }> => e.kind === 'kill');
const events = (effects: Effect[]) => effects.filter((e): e is Extract<Effect, { kind: 'event' }> => e.kind === 'event');

/** Replays every delta the core hands out from now on; `state` is what a checkpoint would hold. */
class Replay {
  state: AgentState = emptyState();
  constructor(private readonly core: AgentCore) {}
  take(): this {
    const d = this.core.takeDelta();
    if (d) this.state = applyDelta(this.state, d);
    return this;
  }
}

/**
 * A node that ran 4 workers of app1 (grant 4 slots, epoch 3 seq 5): w1..w4 running with pids
 * 101..104, plus a pending plan w5 (no room) and w0 that finished at t=50. Returns the
 * checkpointed state.
 */
function crashedNode(): AgentState {
  const core = mockCore();
  const rp = new Replay(core);
  core.registered('3');
  core.updateGrants({ epoch: '3', seq: '5', full: true, grants: [grant('app1', 'map', 4, 2)] }, 0);
  const spawnAll = (effects: Effect[], now: number) => {
    for (const s of spawns(effects))
      core.workerSpawned('app1', s.worker.workerId, 100 + Number(s.worker.workerId.slice(1)), `st-${s.worker.workerId}`, now, 'boot-1');
  };
  // w0..w3 start at once; w4 when w0 has finished.
  spawnAll(core.startWorkers(startReq([plan('w0'), plan('w1'), plan('w2'), plan('w3'), plan('w4')], { amAttempt: 2 }), 10).effects, 20);
  spawnAll(core.workerExited('app1', 'w0', 0, null, 50), 55);
  expect(core.startWorkers(startReq([plan('w5')], { amAttempt: 2 }), 60).workers[0]?.state).to.equal('PENDING');
  core.stopWorkers({ appId: 'app1', workerIds: ['w4'], amAttempt: 2, epoch: '0', reason: 'speculation lost' }, 70);
  rp.take();
  expect(norm(rp.state)).to.deep.equal(norm(core.state()));
  return rp.state;
}

const byId = (ws: WorkerInfo[]) => Object.fromEntries(ws.map((w) => [w.workerId, w]));

/** Grants and apps sorted by key (their order is not part of the state). */
function norm(s: AgentState): AgentState {
  const key = (...parts: string[]) => JSON.stringify(parts);
  return {
    ...s,
    grants: [...s.grants].sort((a, b) => (key(a.appId, a.suId) < key(b.appId, b.suId) ? -1 : 1)),
    apps: [...s.apps].sort((a, b) => (a.appId < b.appId ? -1 : 1)),
  };
}

describe('AgentCore restart (checkpoint deltas and restore)', () => {
  describe('deltas', () => {
    it('names the node in the first delta, then hands out only what changed', () => {
      const core = mockCore();
      const d0 = core.takeDelta();
      expect(d0?.meta).to.deep.equal({ nodeId: 'n1', epoch: '0', grantEpoch: '0', grantSeq: '0' });
      expect(core.takeDelta()).to.equal(undefined);
      core.updateGrants({ epoch: '2', seq: '1', full: false, grants: [grant('app1', 'map', 1)] }, 0);
      const d1 = core.takeDelta()!;
      expect(d1.meta).to.deep.equal({ nodeId: 'n1', epoch: '2', grantEpoch: '2', grantSeq: '1' });
      expect(d1.putGrants).to.deep.equal([grant('app1', 'map', 1)]);
      const r = core.startWorkers(startReq([plan('w1')]), 5);
      const d2 = core.takeDelta()!;
      expect(d2.meta).to.equal(undefined);
      expect(d2.putGrants).to.be.empty;
      expect(d2.putApps).to.deep.equal([{ appId: 'app1', amAttempt: 1, amAddress: '127.0.0.1:9000' }]);
      expect(d2.putWorkers.map((w) => [w.workerId, w.state, w.pid])).to.deep.equal([['w1', 'STARTING', 0]]);
      core.workerSpawned('app1', spawns(r.effects)[0]!.worker.workerId, 4242, '777', 6, 'boot-x');
      const d3 = core.takeDelta()!;
      expect(d3.putWorkers.map((w) => [w.state, w.pid, w.startTime, w.bootId])).to.deep.equal([['RUNNING', 4242, '777', 'boot-x']]);
      // A full table without the grant revokes it: a delete, and the worker is being stopped.
      core.updateGrants({ epoch: '2', seq: '2', full: true, grants: [] }, 7);
      const d4 = core.takeDelta()!;
      expect(d4.delGrants).to.deep.equal([{ appId: 'app1', suId: 'map' }]);
      expect(d4.putWorkers.map((w) => w.stopReason)).to.deep.equal(['grant revoked']);
    });

    it('deletes forgotten workers and apps left without workers or grants', () => {
      const core = mockCore({ finishedRetentionMs: 100 });
      core.updateGrants({ epoch: '1', seq: '1', full: false, grants: [grant('app1', 'map', 1)] }, 0);
      const r = core.startWorkers(startReq([plan('w1')]), 1);
      core.workerSpawned('app1', spawns(r.effects)[0]!.worker.workerId, 9, '1', 2);
      core.workerExited('app1', 'w1', 0, null, 3);
      core.updateGrants({ epoch: '1', seq: '2', full: false, grants: [grant('app1', 'map', 0)] }, 4);
      core.takeDelta();
      core.tick(500);
      const d = core.takeDelta()!;
      expect(d.delWorkers).to.deep.equal([{ appId: 'app1', workerId: 'w1' }]);
      expect(d.delApps).to.deep.equal(['app1']);
    });

    it('replaying every delta in order gives state(), whatever the inputs (property)', () => {
      const op = fc.oneof(
        fc.record({
          k: fc.constant('grant' as const),
          full: fc.boolean(),
          slots: fc.integer({ min: 0, max: 3 }),
          su: fc.constantFrom('map', 'red'),
          am: fc.integer({ min: 0, max: 3 }),
        }),
        fc.record({
          k: fc.constant('plan' as const),
          id: fc.integer({ min: 0, max: 6 }),
          su: fc.constantFrom('map', 'red'),
          am: fc.integer({ min: 1, max: 3 }),
        }),
        fc.record({ k: fc.constant('spawned' as const), id: fc.integer({ min: 0, max: 6 }) }),
        fc.record({ k: fc.constant('exit' as const), id: fc.integer({ min: 0, max: 6 }), code: fc.integer({ min: 0, max: 2 }) }),
        fc.record({ k: fc.constant('stop' as const), id: fc.integer({ min: 0, max: 6 }), am: fc.integer({ min: 1, max: 3 }) }),
        fc.record({ k: fc.constant('tick' as const), dt: fc.integer({ min: 0, max: 400 }) }),
        fc.record({ k: fc.constant('epoch' as const) }),
      );
      fc.assert(
        fc.property(fc.array(op, { maxLength: 60 }), fc.integer({ min: 0, max: 4 }), (ops, writeEvery) => {
          const core = new AgentCore({ nodeId: 'n1', capacity: res(4000, 8192), pendingTimeoutMs: 300, finishedRetentionMs: 200, maxFinished: 3 });
          const rp = new Replay(core);
          let now = 0;
          let epoch = 1;
          let seq = 0;
          const pids = new Map<string, number>();
          ops.forEach((o, i) => {
            now += 1;
            try {
              switch (o.k) {
                case 'grant':
                  seq++;
                  core.updateGrants({ epoch: String(epoch), seq: String(seq), full: o.full, grants: [grant('app1', o.su, o.slots, o.am)] }, now);
                  break;
                case 'plan':
                  for (const s of spawns(core.startWorkers(startReq([plan(`w${o.id}`, { suId: o.su })], { amAttempt: o.am }), now).effects))
                    pids.set(s.worker.workerId, 1000 + pids.size);
                  break;
                case 'spawned':
                  core.workerSpawned('app1', `w${o.id}`, pids.get(`w${o.id}`) ?? 1, String(o.id), now, 'b');
                  break;
                case 'exit':
                  core.workerExited('app1', `w${o.id}`, o.code, null, now);
                  break;
                case 'stop':
                  core.stopWorkers({ appId: 'app1', workerIds: [`w${o.id}`], amAttempt: o.am, epoch: '0', reason: 'x' }, now);
                  break;
                case 'tick':
                  now += o.dt;
                  core.tick(now);
                  break;
                case 'epoch':
                  epoch++;
                  seq = 0;
                  core.registered(String(epoch));
                  break;
              }
            } catch (e) {
              if (!(e instanceof StaleEpochError)) throw e;
            }
            // Deltas are taken at arbitrary points (a write may cover several inputs).
            if (writeEvery === 0 || i % writeEvery === 0) rp.take();
          });
          rp.take();
          expect(norm(rp.state)).to.deep.equal(norm(core.state()));
        }),
        { numRuns: 300 },
      );
    });

    it('mergeDeltas: the later put or delete of a key wins, others are kept', () => {
      const core = mockCore();
      core.takeDelta();
      core.updateGrants({ epoch: '1', seq: '1', full: false, grants: [grant('a', 'x', 1), grant('b', 'y', 1)] }, 0);
      const d1 = core.takeDelta()!;
      core.updateGrants({ epoch: '1', seq: '2', full: false, grants: [grant('a', 'x', 0)] }, 0);
      const d2 = core.takeDelta()!;
      const m = mergeDeltas(d1, d2);
      expect(m.putGrants.map((g) => g.appId)).to.deep.equal(['b']);
      expect(m.delGrants).to.deep.equal([{ appId: 'a', suId: 'x' }]);
      expect(m.meta?.grantSeq).to.equal('2');
      expect(applyDelta(emptyState(), m)).to.deep.equal(applyDelta(applyDelta(emptyState(), d1), d2));
      expect(isEmptyState(emptyState())).to.equal(true);
      expect(isEmptyState(applyDelta(emptyState(), m))).to.equal(false);
    });
  });

  describe('restore', () => {
    const alive = (w: WorkerInfo): Liveness => ({ kind: 'alive', pid: w.pid, startTime: w.startTime, bootId: w.bootId });

    it('re-adopts live workers with their pids and slots, finishes ended ones with their real exit codes, tells the AM', () => {
      const saved = crashedNode();
      const core = mockCore();
      const liveness: Record<string, Liveness> = {
        w1: { kind: 'alive', pid: 101, startTime: 'st-w1', bootId: 'boot-1' },
        w2: { kind: 'exited', exitCode: 7, atMs: 900 },
        w3: { kind: 'gone' },
        w4: { kind: 'alive', pid: 104, startTime: 'st-w4', bootId: 'boot-1' },
      };
      const r = core.restore(saved, (w) => liveness[w.workerId] ?? { kind: 'gone' }, 1000);
      expect(r.adopted.map((w) => [w.workerId, w.pid])).to.deep.equal([
        ['w1', 101],
        ['w4', 104],
      ]);
      expect(r.ended.map((w) => w.workerId)).to.deep.equal(['w2', 'w3']);
      const ws = byId(core.listWorkers());
      expect([ws.w1?.state, ws.w1?.pid, ws.w1?.startTime, ws.w1?.startedAtMs]).to.deep.equal(['RUNNING', 101, 'st-w1', 20]);
      expect([ws.w2?.state, ws.w2?.exitCode, ws.w2?.finishedAtMs]).to.deep.equal(['FAILED', 7, 900]);
      expect(ws.w2?.message).to.equal(`exit code 7 (${ENDED_WHILE_DOWN})`);
      expect([ws.w3?.state, ws.w3?.exitCode]).to.deep.equal(['FAILED', null]);
      expect(ws.w3?.message).to.contain(ENDED_WHILE_DOWN);
      expect(ws.w5?.state).to.equal('PENDING');
      // w4 was being stopped when the agent died: the kill goes out again.
      expect(kills(r.effects)).to.deep.equal([{ kind: 'kill', appId: 'app1', workerId: 'w4', pid: 104, reason: 'speculation lost' }]);
      // Every re-adopted or ended worker's status goes to the AM (and w0, finished 950 ms ago).
      expect(events(r.effects).map((e) => [e.status.workerId, e.status.state, e.amAddress])).to.deep.equal([
        ['w0', 'SUCCEEDED', '127.0.0.1:9000'],
        ['w1', 'RUNNING', '127.0.0.1:9000'],
        ['w2', 'FAILED', '127.0.0.1:9000'],
        ['w3', 'FAILED', '127.0.0.1:9000'],
        ['w4', 'RUNNING', '127.0.0.1:9000'],
      ]);
      expect(spawns(r.effects)).to.be.empty;
      // Slots: w1 and w4 hold 2 of the 4.
      expect(core.used()).to.deep.equal(res(2000, 2048));
      expect(core.summary()).to.deep.equal({ running: 2, pending: 1, finished: 3 });
      // Master numbers and the AM attempt bar come back.
      expect([core.epochSeen, core.appliedGrantEpoch, core.appliedGrantSeq, core.currentGrantSeq]).to.deep.equal(['3', '3', '5', '5']);
      expect(core.amAttemptOf('app1')).to.equal(2);
      expect(() => core.startWorkers(startReq([plan('old')], { amAttempt: 1 }), 1001)).to.throw(StaleEpochError, /am attempt/);
      expect(() => core.updateGrants({ epoch: '2', seq: '9', full: true, grants: [] }, 1001)).to.throw(StaleEpochError);
    });

    it('holds pending plans until the grant table is confirmed, then starts them on free slots', () => {
      const core = mockCore();
      core.restore(crashedNode(), (w) => (w.workerId === 'w1' ? alive(w) : { kind: 'exited', exitCode: 0 }), 1000);
      expect(core.startsHeld).to.equal(true);
      expect(spawns(core.tick(1001))).to.be.empty;
      // A new plan waits too.
      expect(spawns(core.startWorkers(startReq([plan('w6')], { amAttempt: 2 }), 1002).effects)).to.be.empty;
      const go = core.grantsConfirmed(1003);
      expect(spawns(go).map((s) => s.worker.workerId)).to.deep.equal(['w5', 'w6']);
      expect(core.startsHeld).to.equal(false);
      expect(core.grantsConfirmed(1004)).to.be.empty;
    });

    it("a grant message applied from the master releases the hold (the master's table wins)", () => {
      const core = mockCore();
      core.restore(crashedNode(), alive, 1000);
      // The master's full table (same epoch, newer seq): 5 slots now.
      const r = core.updateGrants({ epoch: '3', seq: '6', full: true, grants: [grant('app1', 'map', 5, 2)] }, 1001);
      expect(r.applied).to.equal(true);
      expect(core.startsHeld).to.equal(false);
      expect(spawns(r.effects).map((s) => s.worker.workerId)).to.deep.equal(['w5']);
    });

    it("kills no more than the master's table allows when it shrank while the agent was down", () => {
      const core = mockCore();
      core.restore(crashedNode(), alive, 1000);
      const r = core.updateGrants({ epoch: '3', seq: '6', full: true, grants: [grant('app1', 'map', 2, 2)] }, 1001);
      // w1..w4 run (w4 already being stopped): the newest of the others beyond 2 goes.
      expect(kills(r.effects).map((k) => k.workerId)).to.deep.equal(['w3']);
    });

    it('reports a worker being stopped that ended meanwhile as KILLED, and a clean exit as SUCCEEDED', () => {
      const core = mockCore();
      const r = core.restore(crashedNode(), (w) => (w.workerId === 'w4' ? { kind: 'gone' } : { kind: 'exited', exitCode: 0 }), 1000);
      const ws = byId(core.listWorkers());
      expect([ws.w4?.state, ws.w4?.message]).to.deep.equal(['KILLED', 'speculation lost']);
      expect([ws.w1?.state, ws.w1?.exitCode]).to.deep.equal(['SUCCEEDED', 0]);
      expect(kills(r.effects)).to.be.empty;
      expect(core.used()).to.deep.equal(res(0, 0));
    });

    it('re-adopts a worker whose spawn was never recorded (pid 0) when the shell finds its process', () => {
      const core0 = mockCore();
      core0.updateGrants({ epoch: '1', seq: '1', full: false, grants: [grant('app1', 'map', 1)] }, 0);
      core0.startWorkers(startReq([plan('w1')]), 1); // STARTING, crash before workerSpawned
      const saved = applyDelta(emptyState(), core0.takeDelta()!);
      expect(saved.workers[0]?.state).to.equal('STARTING');
      const core = mockCore();
      const seen: WorkerInfo[] = [];
      core.restore(
        saved,
        (w) => {
          seen.push(w);
          return { kind: 'alive', pid: 555, startTime: '42', bootId: 'b' };
        },
        10,
      );
      expect(seen.map((w) => [w.workerId, w.pid])).to.deep.equal([['w1', 0]]);
      expect(core.worker('app1', 'w1')).to.include({ state: 'RUNNING', pid: 555, startTime: '42', bootId: 'b' });
    });

    it('does not resend statuses of workers that finished long ago; AM processes go to the master, not to an AM', () => {
      const core0 = mockCore({ resendFinishedWithinMs: 100 });
      core0.updateGrants({ epoch: '1', seq: '1', full: false, grants: [grant('app1', 'map', 1), grant('app1', AM_SU, 1)] }, 0);
      const a = core0.startWorkers({ appId: 'app1', amAttempt: 1, amAddress: '', epoch: '1', plans: [plan('am.1', { suId: AM_SU, task: AM_SU })] }, 1);
      const b = core0.startWorkers(startReq([plan('w1')]), 1);
      for (const s of spawns([...a.effects, ...b.effects])) core0.workerSpawned('app1', s.worker.workerId, 7, '7', 2);
      core0.workerExited('app1', 'w1', 0, null, 3);
      const saved = core0.state();
      const core = mockCore({ resendFinishedWithinMs: 100 });
      const r = core.restore(saved, () => ({ kind: 'exited', exitCode: 1 }), 10_000);
      expect(events(r.effects)).to.be.empty; // w1 finished 10 s before; am.1 is an AM process
      expect(core.worker('app1', 'am.1')).to.include({ state: 'FAILED', exitCode: 1 });
      expect(core.amWorkers().map((w) => w.state)).to.deep.equal(['FAILED']);
    });

    it('keeps acceptance order across the restart (oldest pending plan starts first)', () => {
      const core0 = mockCore();
      core0.updateGrants({ epoch: '1', seq: '1', full: false, grants: [grant('app1', 'map', 0)] }, 0);
      core0.startWorkers(startReq([plan('z'), plan('a'), plan('m')]), 1);
      const saved = applyDelta(emptyState(), core0.takeDelta()!);
      const core = mockCore();
      core.restore(saved, alive, 2);
      core.grantsConfirmed(3);
      const r = core.updateGrants({ epoch: '1', seq: '2', full: false, grants: [grant('app1', 'map', 2)] }, 4);
      expect(spawns(r.effects).map((s) => s.worker.workerId)).to.deep.equal(['z', 'a']);
      expect(core.startWorkers(startReq([plan('new')]), 5).workers[0]?.state).to.equal('PENDING');
    });

    it('keeps a pending plan waiting for the grant table that holds its slot across the restart', () => {
      const core0 = mockCore();
      core0.updateGrants({ epoch: '1', seq: '1', full: false, grants: [grant('app1', 'map', 0)] }, 0);
      core0.startWorkers(startReq([plan('w1', { grantTable: { epoch: '1', seq: '3' } })]), 1);
      const saved = applyDelta(emptyState(), core0.takeDelta()!);
      const core = mockCore();
      core.restore(saved, alive, 2);
      expect(spawns(core.grantsConfirmed(3))).to.be.empty;
      expect(spawns(core.updateGrants({ epoch: '1', seq: '2', full: false, grants: [grant('app1', 'map', 1)] }, 4).effects)).to.be.empty;
      const r = core.updateGrants({ epoch: '1', seq: '3', full: false, grants: [grant('app1', 'map', 1)] }, 5);
      expect(spawns(r.effects).map((s) => s.worker.workerId)).to.deep.equal(['w1']);
    });

    it('refuses a checkpoint of another node, and restoring into a core that is not fresh', () => {
      expect(() => mockCore({ nodeId: 'other' }).restore(crashedNode(), alive, 1)).to.throw(FailedPreconditionError, /belongs to node "n1"/);
      const used = mockCore();
      used.registered('1');
      expect(() => used.restore(crashedNode(), alive, 1)).to.throw(FailedPreconditionError, /fresh/);
    });

    it('a restored core checkpoints everything it changed, so a second restart sees the outcome', () => {
      const core = mockCore();
      const rp = new Replay(core);
      rp.state = crashedNode();
      core.takeDelta(); // the meta record of a fresh core
      core.restore(rp.state, (w) => (w.workerId === 'w2' ? { kind: 'exited', exitCode: 7 } : alive(w)), 1000);
      rp.take();
      expect(norm(rp.state)).to.deep.equal(norm(core.state()));
      expect(rp.state.workers.find((w) => w.workerId === 'w2')).to.include({ state: 'FAILED', exitCode: 7 });
    });
  });

  describe('Grant.am_attempt (the master fences an old AM attempt)', () => {
    it("raises the app's bar: plans and stops of older attempts are refused, their pending plans rejected", () => {
      const core = mockCore();
      core.updateGrants({ epoch: '1', seq: '1', full: false, grants: [grant('app1', 'map', 1, 1)] }, 0);
      const r = core.startWorkers(startReq([plan('w1'), plan('w2')], { amAttempt: 1 }), 1);
      core.workerSpawned('app1', spawns(r.effects)[0]!.worker.workerId, 11, '1', 2);
      expect(core.worker('app1', 'w2')?.state).to.equal('PENDING');
      const g = core.updateGrants({ epoch: '1', seq: '2', full: false, grants: [grant('app1', 'map', 1, 2)] }, 3);
      expect(core.amAttemptOf('app1')).to.equal(2);
      // The old attempt's unstarted plan is void; its running worker stays (the new AM adopts it).
      expect(core.worker('app1', 'w2')).to.include({ state: 'REJECTED' });
      expect(core.worker('app1', 'w2')?.message).to.match(/superseded by attempt 2/);
      expect(events(g.effects).map((e) => [e.status.workerId, e.status.state])).to.deep.equal([['w2', 'REJECTED']]);
      expect(core.worker('app1', 'w1')?.state).to.equal('RUNNING');
      expect(() => core.startWorkers(startReq([plan('w3')], { amAttempt: 1 }), 4)).to.throw(StaleEpochError, /am attempt/);
      expect(() => core.stopWorkers({ appId: 'app1', workerIds: ['w1'], amAttempt: 1, epoch: '0', reason: '' }, 4)).to.throw(StaleEpochError, /am attempt/);
      // The new attempt may stop the adopted worker.
      expect(kills(core.stopWorkers({ appId: 'app1', workerIds: ['w1'], amAttempt: 2, epoch: '0', reason: 'new AM' }, 5).effects)).to.have.length(1);
    });

    it('never lowers the bar; 0 means not given; a full table carries it too', () => {
      const core = mockCore();
      core.updateGrants({ epoch: '1', seq: '1', full: true, grants: [grant('app1', 'map', 1, 3)] }, 0);
      expect(core.amAttemptOf('app1')).to.equal(3);
      core.updateGrants({ epoch: '1', seq: '2', full: true, grants: [grant('app1', 'map', 1, 2), grant('app2', 'x', 1, 0)] }, 1);
      expect(core.amAttemptOf('app1')).to.equal(3);
      expect(core.amAttemptOf('app2')).to.equal(0);
      expect(core.grantTable().map((g) => [g.appId, g.amAttempt])).to.deep.equal([
        ['app1', 2],
        ['app2', 0],
      ]);
      // The bar survives a restart.
      const saved = core.state();
      const again = mockCore();
      again.restore(saved, () => ({ kind: 'gone' }), 2);
      expect(again.amAttemptOf('app1')).to.equal(3);
    });
  });
});
