import { expect } from 'chai';
import { AM_SU, InvalidArgumentError, nullLogger, res, StaleEpochError, type Logger, type Resource } from '@fuxi/common';
import { CoreState } from '../core-state.js';
import { checkAmAttempt, checkEpoch, raiseAmAttempt, updateGrants } from '../grants.js';
import { requestStop, workerSpawned } from '../lifecycle.js';
import { takeDelta } from '../persistence.js';
import { startWorkers } from '../plans.js';
import { grantTable, listWorkers } from '../queries.js';
import type { Effect, GrantEntry, PlanInput } from '../types.js';

const SLOT: Resource = res(1000, 1024);

function recordingLogger(lines: string[]): Logger {
  const log: Logger = {
    debug: (_o, msg) => lines.push(`debug ${msg}`),
    info: (_o, msg) => lines.push(`info ${msg}`),
    warn: (_o, msg) => lines.push(`warn ${msg}`),
    error: (_o, msg) => lines.push(`error ${msg}`),
    child: () => log,
  };
  return log;
}

function state(log: Logger = nullLogger): CoreState {
  return new CoreState({ nodeId: 'n1', capacity: res(8000, 16384) }, log);
}

function grant(appId: string, slots: number, amAttempt = 0): GrantEntry {
  return { appId, suId: 'map', slots, resource: SLOT, amAttempt };
}

function plan(workerId: string): PlanInput {
  return { workerId, suId: 'map', task: 'map', instance: 0, attempt: 1, command: { argv: ['true'], env: {}, cwd: '' }, resource: SLOT };
}

const kills = (effects: Effect[]) => effects.filter((e): e is Extract<Effect, { kind: 'kill' }> => e.kind === 'kill').map((k) => k.workerId);
const states = (st: CoreState) => listWorkers(st, '').map((w) => `${w.workerId}:${w.state}`);

/** Runs workers w1..wn of app `a` (n slots granted at seq 1, epoch 1), pids 101.. */
function running(st: CoreState, n: number): void {
  updateGrants(st, { epoch: '1', seq: '1', full: false, grants: [grant('a', n)] }, 0);
  const ids = Array.from({ length: n }, (_, i) => `w${i + 1}`);
  startWorkers(st, { appId: 'a', amAttempt: 1, amAddress: 'am:1', epoch: '0', plans: ids.map(plan) }, 1);
  ids.forEach((id, i) => workerSpawned(st, 'a', id, 101 + i, 't', 2, ''));
}

describe('agent core grants', () => {
  describe('checkEpoch', () => {
    it('raises the bar to a newer epoch (logged, in the next delta), accepts the same one, refuses an older one', () => {
      const lines: string[] = [];
      const st = state(recordingLogger(lines));
      takeDelta(st);
      checkEpoch(st, '3');
      expect(st.epoch).to.equal('3');
      expect(lines).to.deep.equal(['info new master epoch']);
      expect(takeDelta(st)?.meta?.epoch).to.equal('3');
      checkEpoch(st, '3');
      expect(takeDelta(st)).to.equal(undefined);
      expect(() => checkEpoch(st, '2')).to.throw(StaleEpochError);
      expect(st.epoch).to.equal('3');
    });
  });

  describe('updateGrants', () => {
    it('a full table writes to the checkpoint only the grants it changed (and deletes the ones it dropped)', () => {
      const st = state();
      updateGrants(st, { epoch: '1', seq: '1', full: true, grants: [grant('a', 1), grant('b', 2), grant('c', 1)] }, 0);
      expect(takeDelta(st)?.putGrants.map((g) => g.appId)).to.deep.equal(['a', 'b', 'c']);
      // The same table again (as every heartbeat brings it): no grant to write.
      updateGrants(st, { epoch: '1', seq: '2', full: true, grants: [grant('a', 1), grant('b', 2), grant('c', 1)] }, 0);
      const same = takeDelta(st);
      expect([same?.putGrants, same?.delGrants]).to.deep.equal([[], []]);
      // b shrinks, c goes, d comes: only those.
      updateGrants(st, { epoch: '1', seq: '3', full: true, grants: [grant('a', 1), grant('b', 1), grant('d', 1)] }, 0);
      const d = takeDelta(st);
      expect(d?.putGrants.map((g) => `${g.appId}:${g.slots}`).sort()).to.deep.equal(['b:1', 'd:1']);
      expect(d?.delGrants.map((g) => g.appId)).to.deep.equal(['c']);
      expect(
        grantTable(st)
          .map((g) => g.appId)
          .sort(),
      ).to.deep.equal(['a', 'b', 'd']);
    });

    it('applies nothing of a message with a malformed entry', () => {
      const st = state();
      updateGrants(st, { epoch: '1', seq: '1', full: false, grants: [grant('a', 1)] }, 0);
      const bad = { epoch: '1', seq: '2', full: true, grants: [grant('b', 2), { ...grant('c', 1), suId: '' }] };
      expect(() => updateGrants(st, bad, 1)).to.throw(InvalidArgumentError);
      expect(grantTable(st).map((g) => g.appId)).to.deep.equal(['a']);
      expect(st.grantSeq).to.equal('1');
    });

    it('says why an out-of-order delta or an older full table is ignored, and keeps the applied seq', () => {
      const lines: string[] = [];
      const st = state(recordingLogger(lines));
      updateGrants(st, { epoch: '1', seq: '3', full: true, grants: [grant('a', 1)] }, 0);
      const gap = updateGrants(st, { epoch: '1', seq: '5', full: false, grants: [grant('a', 2)] }, 1);
      const older = updateGrants(st, { epoch: '1', seq: '2', full: true, grants: [] }, 2);
      expect([gap.applied, gap.appliedSeq, older.applied, older.appliedSeq]).to.deep.equal([false, '3', false, '3']);
      expect(lines.slice(1)).to.deep.equal([
        'info grant delta out of order; ignored (the next heartbeat brings the full table)',
        'info older full grant table ignored',
      ]);
      expect(grantTable(st).map((g) => g.slots)).to.deep.equal([1]);
    });

    it('on a shrink kills the most recently started workers beyond the grant, not counting those already being stopped', () => {
      const st = state();
      running(st, 4);
      const w2 = st.workers.get(`a\u0000w2`)!;
      expect(kills(requestStop(st, w2, 'by hand'))).to.deep.equal(['w2']);
      const r = updateGrants(st, { epoch: '1', seq: '2', full: false, grants: [grant('a', 1)] }, 3);
      expect(kills(r.effects)).to.deep.equal(['w4', 'w3']);
      expect(listWorkers(st, '').map((w) => w.stopReason)).to.deep.equal(['', 'by hand', 'grant shrunk to 1 slot(s)', 'grant shrunk to 1 slot(s)']);
    });

    it('stops an application master whose slot was released as a matter of course (info), a task worker over its grant with a warning', () => {
      const st = state();
      const am = { ...plan('am.1'), suId: AM_SU, task: AM_SU };
      updateGrants(st, { epoch: '1', seq: '1', full: false, grants: [{ ...grant('j', 1), suId: AM_SU }, grant('j', 1)] }, 0);
      startWorkers(st, { appId: 'j', amAttempt: 0, amAddress: '', epoch: '1', plans: [am] }, 1);
      startWorkers(st, { appId: 'j', amAttempt: 1, amAddress: 'am:1', epoch: '0', plans: [plan('map.0.1')] }, 1);
      workerSpawned(st, 'j', 'am.1', 100, 't', 2, '');
      workerSpawned(st, 'j', 'map.0.1', 101, 't', 2, '');
      const r = updateGrants(st, { epoch: '1', seq: '2', full: false, grants: [{ ...grant('j', 0), suId: AM_SU }, grant('j', 0)] }, 3);
      const logs = r.effects.filter((e): e is Extract<Effect, { kind: 'log' }> => e.kind === 'log').map((e) => `${e.level} ${e.msg}`);
      expect(logs).to.include.members(['info stopping an application master whose slot was released', 'warn killing worker over its grant']);
      expect(kills(r.effects).sort()).to.deep.equal(['am.1', 'map.0.1']);
    });

    it('on a full table kills the workers of every grant it no longer holds', () => {
      const st = state();
      running(st, 2);
      const r = updateGrants(st, { epoch: '1', seq: '2', full: true, grants: [grant('b', 1)] }, 3);
      expect(kills(r.effects)).to.deep.equal(['w2', 'w1']);
      expect(listWorkers(st, 'a').map((w) => w.stopReason)).to.deep.equal(['grant revoked', 'grant revoked']);
    });
  });

  describe('AM attempt bar', () => {
    it('raising it rejects pending plans of older attempts only; running workers stay; it never goes down', () => {
      const st = state();
      running(st, 1);
      startWorkers(st, { appId: 'a', amAttempt: 1, amAddress: 'am:1', epoch: '0', plans: [plan('w2')] }, 3); // no room: PENDING
      const effects = raiseAmAttempt(st, 'a', 2, 4, 'grant');
      expect(states(st)).to.deep.equal(['w1:RUNNING', 'w2:REJECTED']);
      expect(effects.filter((e) => e.kind === 'log').map((e) => e.kind === 'log' && e.msg)).to.deep.equal([
        'AM attempt bar raised: older attempts are fenced',
        'worker rejected',
      ]);
      expect(raiseAmAttempt(st, 'a', 1, 5, 'grant')).to.be.empty;
      expect(st.apps.get('a')?.amAttempt).to.equal(2);
      expect(() => checkAmAttempt(st, 'a', 1)).to.throw(StaleEpochError);
      expect(() => checkAmAttempt(st, 'a', 2)).not.to.throw();
    });

    it('creates the app record for an unknown app (in the next delta) without logging a raise from 0', () => {
      const st = state();
      takeDelta(st);
      expect(raiseAmAttempt(st, 'new', 3, 0, 'grant')).to.be.empty;
      expect(takeDelta(st)?.putApps).to.deep.equal([{ appId: 'new', amAttempt: 3, amAddress: '' }]);
    });
  });
});
