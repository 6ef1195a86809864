import { expect } from 'chai';
import { nullLogger, PermissionDeniedError, res, UnavailableError } from '@fuxi/common';
import { CoreState } from '../core-state.js';
import { updateGrants } from '../grants.js';
import { takeDelta } from '../persistence.js';
import { checkPlanToken, currentAmToken, planTokenWaits, type PlanAuthInput } from '../plan-tokens.js';
import { restore } from '../restore.js';
import type { GrantEntry } from '../types.js';

const SLOT = res(1000, 1024);

function state(): CoreState {
  return new CoreState({ nodeId: 'n1', capacity: res(8000, 16384) }, nullLogger);
}

function grant(appId: string, amAttempt: number, amTokenHash: string, suId = 'map'): GrantEntry {
  return { appId, suId, slots: 1, resource: SLOT, amAttempt, amTokenHash };
}

const start = (over: Partial<PlanAuthInput>): PlanAuthInput => ({
  method: 'StartWorkers',
  appId: 'a',
  amAttempt: 2,
  presentedHash: 'h2',
  trustedWithoutToken: false,
  ...over,
});

function refusal(st: CoreState, input: PlanAuthInput): Error | undefined {
  try {
    checkPlanToken(st, input);
    return undefined;
  } catch (e) {
    return e as Error;
  }
}

describe('agent core: plans need the AM token', () => {
  it("takes the newest attempt's hash from the app's grants", () => {
    const st = state();
    updateGrants(st, { epoch: '1', seq: '1', full: false, grants: [grant('a', 1, 'h1', 'map'), grant('a', 2, 'h2', 'reduce'), grant('b', 1, 'hb')] }, 0);
    expect(currentAmToken(st, 'a')).to.deep.equal({ attempt: 2, hash: 'h2' });
    expect(currentAmToken(st, 'c')).to.equal(undefined);
  });

  it("accepts the current attempt's token; refuses none, a wrong one or an older attempt's (PERMISSION_DENIED)", () => {
    const st = state();
    updateGrants(st, { epoch: '1', seq: '1', full: false, grants: [grant('a', 2, 'h2')] }, 0);
    expect(refusal(st, start({}))).to.equal(undefined);
    const none = refusal(st, start({ presentedHash: undefined }));
    expect(none).to.be.instanceOf(PermissionDeniedError);
    expect(none?.message).to.match(/^StartWorkers: permission denied: no application master token/);
    expect(refusal(st, start({ presentedHash: 'forged' }))).to.be.instanceOf(PermissionDeniedError);
    expect(refusal(st, start({ amAttempt: 1, presentedHash: 'h1' }))).to.be.instanceOf(PermissionDeniedError);
    expect(refusal(st, start({ method: 'StopWorkers', amAttempt: 1, presentedHash: 'h1' }))).to.be.instanceOf(PermissionDeniedError);
    // The current token may not claim a later attempt (raising the bar would fence the live AM).
    expect(refusal(st, start({ amAttempt: 3 }))).to.be.instanceOf(PermissionDeniedError);
  });

  it('a token for an attempt whose grant is not here yet is UNAVAILABLE (retried), never accepted', () => {
    const st = state();
    expect(refusal(st, start({}))).to.be.instanceOf(UnavailableError);
    updateGrants(st, { epoch: '1', seq: '1', full: false, grants: [grant('a', 1, 'h1')] }, 0);
    expect(refusal(st, start({ amAttempt: 2, presentedHash: 'h2' }))).to.be.instanceOf(UnavailableError);
    updateGrants(st, { epoch: '1', seq: '2', full: false, grants: [grant('a', 2, 'h2')] }, 0);
    expect(refusal(st, start({}))).to.equal(undefined);
  });

  it('planTokenWaits is true exactly where the check says UNAVAILABLE (the wait makes no error)', () => {
    const st = state();
    const cases: PlanAuthInput[] = [
      start({}),
      start({ presentedHash: undefined }),
      start({ presentedHash: undefined, trustedWithoutToken: true }),
      start({ presentedHash: 'forged' }),
      start({ amAttempt: 1, presentedHash: 'h1' }),
      start({ amAttempt: 3 }),
      start({ appId: 'b', presentedHash: 'hb', amAttempt: 1 }),
    ];
    const agree = () => {
      for (const c of cases) expect(planTokenWaits(st, c), JSON.stringify(c)).to.equal(refusal(st, c) instanceof UnavailableError);
    };
    agree();
    updateGrants(st, { epoch: '1', seq: '1', full: false, grants: [grant('a', 1, 'h1')] }, 0);
    agree();
    updateGrants(st, { epoch: '1', seq: '2', full: false, grants: [grant('a', 2, 'h2'), grant('b', 1, 'hb')] }, 0);
    agree();
    expect(cases.filter((c) => planTokenWaits(st, c))).to.deep.equal([]);
  });

  it('the master (or, on an insecure cluster, a stop) may go without a token; a tokenless plan otherwise never', () => {
    const st = state();
    expect(refusal(st, start({ presentedHash: undefined, trustedWithoutToken: true }))).to.equal(undefined);
    expect(refusal(st, start({ presentedHash: undefined }))).to.be.instanceOf(PermissionDeniedError);
  });

  it('keeps the hash with the grants in the checkpoint: a restarted agent checks the same token', () => {
    const st = state();
    updateGrants(st, { epoch: '1', seq: '1', full: false, grants: [grant('a', 2, 'h2')] }, 0);
    takeDelta(st);
    const saved = { meta: { nodeId: 'n1', epoch: '1', grantEpoch: '1', grantSeq: '1' }, grants: [grant('a', 2, 'h2')], apps: [], workers: [] };
    const again = state();
    restore(again, saved, () => ({ kind: 'gone' }), 0);
    expect(currentAmToken(again, 'a')).to.deep.equal({ attempt: 2, hash: 'h2' });
  });
});
