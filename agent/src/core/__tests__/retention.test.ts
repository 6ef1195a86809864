import { expect } from 'chai';
import { nullLogger, res, type Resource } from '@fuxi/common';
import { CoreState } from '../core-state.js';
import { updateGrants } from '../grants.js';
import { workerExited, workerSpawned } from '../lifecycle.js';
import { takeDelta } from '../persistence.js';
import { startWorkers } from '../plans.js';
import { listWorkers } from '../queries.js';
import { tick } from '../retention.js';
import type { AgentCoreConfig, PlanInput } from '../types.js';

const SLOT: Resource = res(1000, 1024);

function state(over: Partial<AgentCoreConfig> = {}): CoreState {
  return new CoreState({ nodeId: 'n1', capacity: res(8000, 16384), ...over }, nullLogger);
}

function plan(workerId: string, suId = 'map'): PlanInput {
  return { workerId, suId, task: 'map', instance: 0, attempt: 1, command: { argv: ['true'], env: {}, cwd: '' }, resource: SLOT };
}

function grant(st: CoreState, appId: string, slots: number, seq: string, now = 0): void {
  updateGrants(st, { epoch: '1', seq, full: false, grants: [{ appId, suId: 'map', slots, resource: SLOT }] }, now);
}

/** Starts, spawns and ends worker `id` of `appId` at `endAt`. */
function runToEnd(st: CoreState, appId: string, id: string, startAt: number, endAt: number): void {
  startWorkers(st, { appId, amAttempt: 1, amAddress: 'am:1', epoch: '0', plans: [plan(id)] }, startAt);
  workerSpawned(st, appId, id, 100, 't', startAt, '');
  workerExited(st, appId, id, 0, null, endAt, '');
}

const ids = (st: CoreState) => listWorkers(st, '').map((w) => `${w.workerId}:${w.state}`);

describe('agent core retention (tick)', () => {
  it('rejects a pending plan once it has waited exactly pendingTimeoutMs, not before', () => {
    const st = state({ pendingTimeoutMs: 1000 });
    startWorkers(st, { appId: 'a', amAttempt: 1, amAddress: 'am:1', epoch: '0', plans: [plan('w1')] }, 0);
    expect(tick(st, 999)).to.be.empty;
    expect(ids(st)).to.deep.equal(['w1:PENDING']);
    const effects = tick(st, 1000);
    expect(ids(st)).to.deep.equal(['w1:REJECTED']);
    expect(effects.map((e) => e.kind)).to.deep.equal(['log', 'event']);
  });

  it('keeps at most maxFinished finished workers, forgetting the oldest finished first; never an active one', () => {
    const st = state({ maxFinished: 2 });
    grant(st, 'a', 1, '1');
    runToEnd(st, 'a', 'w1', 1, 30);
    runToEnd(st, 'a', 'w2', 2, 10); // finished first
    runToEnd(st, 'a', 'w3', 3, 20);
    startWorkers(st, { appId: 'a', amAttempt: 1, amAddress: 'am:1', epoch: '0', plans: [plan('w4')] }, 40); // starts: the slot is free
    tick(st, 50);
    expect(ids(st)).to.deep.equal(['w1:SUCCEEDED', 'w3:SUCCEEDED', 'w4:STARTING']);
  });

  it('breaks ties in finish time by acceptance order', () => {
    const st = state({ maxFinished: 1 });
    grant(st, 'a', 2, '1');
    runToEnd(st, 'a', 'w1', 1, 10);
    runToEnd(st, 'a', 'w2', 2, 10);
    tick(st, 11);
    expect(ids(st)).to.deep.equal(['w2:SUCCEEDED']);
  });

  it('forgets workers finished longer than finishedRetentionMs ago, and then the apps left with neither workers nor grants', () => {
    const st = state({ finishedRetentionMs: 100 });
    grant(st, 'a', 1, '1');
    grant(st, 'b', 1, '2');
    runToEnd(st, 'a', 'w1', 1, 10);
    runToEnd(st, 'b', 'w1', 1, 10);
    grant(st, 'b', 0, '3'); // b's grant revoked; a keeps its grant
    takeDelta(st);
    tick(st, 110);
    expect(ids(st)).to.have.length(2);
    tick(st, 111);
    expect(ids(st)).to.be.empty;
    expect([...st.apps.keys()]).to.deep.equal(['a']);
    const d = takeDelta(st)!;
    expect(d.delWorkers).to.deep.equal([
      { appId: 'a', workerId: 'w1' },
      { appId: 'b', workerId: 'w1' },
    ]);
    expect(d.delApps).to.deep.equal(['b']);
  });

  it('changes nothing when no finished worker is due', () => {
    const st = state({ finishedRetentionMs: 100 });
    grant(st, 'a', 1, '1');
    runToEnd(st, 'a', 'w1', 1, 10);
    takeDelta(st);
    expect(tick(st, 50)).to.be.empty;
    expect(takeDelta(st)).to.equal(undefined);
  });
});
