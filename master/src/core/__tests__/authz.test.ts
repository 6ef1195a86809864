import { expect } from 'chai';
import { PermissionDeniedError, UnauthenticatedError, type FuxiError } from '@fuxi/common';
import { loadFuxiProto } from '@fuxi/proto';
import { amTokenAttempt } from '../am-tokens.js';
import { authorize, authorizeScheduler, canSeeJob, MASTER_METHODS, type AuthzTarget, type CallerIdentity, type MasterMethodName } from '../authz.js';
import { Harness, mockSpec } from './core-factories.js';

const admin: CallerIdentity = { name: 'root', role: 'admin' };
const alice: CallerIdentity = { name: 'alice', role: 'user' };
const bob: CallerIdentity = { name: 'bob', role: 'user', groups: ['gold'] };
const agentN1: CallerIdentity = { name: 'n1', role: 'agent' };
const anon: CallerIdentity = { name: 'anonymous', role: 'anonymous' };
const am = (attempt: number, appId = 'j1'): CallerIdentity => ({ name: `am:${appId}#${attempt}`, role: 'am', appId, attempt });

const secure = (over: Partial<AuthzTarget> = {}): AuthzTarget => ({ insecure: false, ...over });
const app = { appId: 'j1', attempt: 2, tokenRequired: true };
const alicesJob = { owner: 'alice', group: 'default' };
const goldJob = { owner: 'carol', group: 'gold' };

function refusal(method: MasterMethodName, caller: CallerIdentity, target: AuthzTarget): FuxiError | undefined {
  try {
    authorize(method, caller, target);
    return undefined;
  } catch (e) {
    return e as FuxiError;
  }
}

describe('master core: authorization table', () => {
  it('names a requirement for every MasterService method', () => {
    const methods = Object.keys(loadFuxiProto().MasterService.service).filter((k) => /^[A-Z]/.test(k));
    expect(Object.keys(MASTER_METHODS).sort()).to.deep.equal(methods.sort());
    for (const m of ['CordonNode', 'UncordonNode', 'DrainNode'] as const) expect(MASTER_METHODS[m]).to.equal('admin');
    for (const m of ['RegisterApp', 'UpdateRequests', 'ReturnSlots', 'ReportAppState', 'FinishApp', 'WatchAssignments', 'SaveAppSnapshot'] as const)
      expect(MASTER_METHODS[m]).to.equal('am');
    // A batch of AM calls passes as a whole: each call in it is checked as that call alone.
    expect(MASTER_METHODS.AmCalls).to.equal('batch');
    for (const caller of [anon, alice, am(2)]) expect(refusal('AmCalls', caller, secure())).to.equal(undefined);
  });

  it('cluster operations need admin: a user is PERMISSION_DENIED, no credentials UNAUTHENTICATED', () => {
    expect(refusal('CordonNode', admin, secure())).to.equal(undefined);
    expect(refusal('DrainNode', alice, secure())).to.be.instanceOf(PermissionDeniedError);
    expect(refusal('DrainNode', alice, secure())?.message).to.match(/^DrainNode: permission denied: needs the admin role; alice is a user/);
    expect(refusal('CordonNode', anon, secure())).to.be.instanceOf(UnauthenticatedError);
    expect(refusal('CordonNode', am(2), secure())).to.be.instanceOf(PermissionDeniedError);
  });

  it('an insecure cluster trusts anonymous callers as admins, but not as an AM', () => {
    expect(refusal('CordonNode', anon, secure({ insecure: true }))).to.equal(undefined);
    expect(refusal('KillJob', anon, secure({ insecure: true, job: alicesJob }))).to.equal(undefined);
    expect(refusal('Heartbeat', anon, secure({ insecure: true, nodeId: 'n1' }))).to.equal(undefined);
    expect(refusal('UpdateRequests', anon, secure({ insecure: true, app }))).to.be.instanceOf(UnauthenticatedError);
    // A user token on an insecure cluster is still a user.
    expect(refusal('CordonNode', alice, secure({ insecure: true }))).to.be.instanceOf(PermissionDeniedError);
  });

  it('agent calls need an agent acting as its own node', () => {
    expect(refusal('Heartbeat', agentN1, secure({ nodeId: 'n1' }))).to.equal(undefined);
    expect(refusal('RegisterAgent', agentN1, secure({ nodeId: 'n2' }))?.message).to.match(/agent n1 may not act as node n2/);
    expect(refusal('Heartbeat', alice, secure({ nodeId: 'n1' }))).to.be.instanceOf(PermissionDeniedError);
    expect(refusal('WatchGrants', admin, secure({ nodeId: 'n1' }))).to.be.instanceOf(PermissionDeniedError);
  });

  it("AM calls need the token of the app's current attempt: an older attempt's is PERMISSION_DENIED", () => {
    expect(refusal('UpdateRequests', am(2), secure({ app }))).to.equal(undefined);
    const old = refusal('FinishApp', am(1), secure({ app }));
    expect(old).to.be.instanceOf(PermissionDeniedError);
    expect(old?.message).to.match(/token is of attempt 1 of j1; the current attempt is 2/);
    expect(refusal('RegisterApp', am(2, 'other'), secure({ app }))).to.be.instanceOf(PermissionDeniedError);
    expect(refusal('RegisterApp', admin, secure({ app }))).to.be.instanceOf(PermissionDeniedError);
    expect(refusal('RegisterApp', anon, secure({ app }))).to.be.instanceOf(UnauthenticatedError);
    // No such app: the handler answers (NOT_FOUND), not the table.
    expect(refusal('WatchAssignments', anon, secure())).to.equal(undefined);
    // An app without a token (a record from before tokens) is fenced by its attempt number alone.
    expect(refusal('RegisterApp', anon, secure({ insecure: true, app: { ...app, tokenRequired: false } }))).to.equal(undefined);
  });

  it('GetAppSnapshot: the AM, or whoever may see the job', () => {
    expect(refusal('GetAppSnapshot', am(2), secure({ app, job: alicesJob }))).to.equal(undefined);
    expect(refusal('GetAppSnapshot', alice, secure({ app, job: alicesJob }))).to.equal(undefined);
    expect(refusal('GetAppSnapshot', bob, secure({ app, job: alicesJob }))).to.be.instanceOf(PermissionDeniedError);
  });

  it("users see and kill their own jobs and their groups' jobs; admins any", () => {
    expect(refusal('KillJob', alice, secure({ job: alicesJob }))).to.equal(undefined);
    const other = refusal('KillJob', bob, secure({ job: alicesJob }));
    expect(other).to.be.instanceOf(PermissionDeniedError);
    expect(other?.message).to.match(/job owned by alice .* bob may act only on its own jobs and those of quota groups gold/);
    expect(refusal('GetJob', bob, secure({ job: goldJob }))).to.equal(undefined);
    expect(refusal('WatchJob', alice, secure({ job: goldJob }))).to.be.instanceOf(PermissionDeniedError);
    expect(refusal('KillJob', admin, secure({ job: goldJob }))).to.equal(undefined);
    expect(refusal('GetJob', agentN1, secure({ job: alicesJob }))).to.be.instanceOf(PermissionDeniedError);
    expect(canSeeJob(alice, false, goldJob)).to.equal(false);
    expect(canSeeJob(bob, false, goldJob)).to.equal(true);
    expect(canSeeJob(anon, true, goldJob)).to.equal(true);
    expect(canSeeJob(anon, false, goldJob)).to.equal(false);
  });

  it('a user whose token names groups submits only into them; one that names none, anywhere', () => {
    expect(refusal('SubmitJob', bob, secure({ groups: ['gold'] }))).to.equal(undefined);
    expect(refusal('SubmitJobs', bob, secure({ groups: ['gold', 'default'] }))?.message).to.match(/bob may submit only into quota groups gold, not default/);
    expect(refusal('SubmitJob', alice, secure({ groups: ['gold'] }))).to.equal(undefined);
    expect(refusal('SubmitJob', agentN1, secure({ groups: ['default'] }))).to.be.instanceOf(PermissionDeniedError);
    expect(refusal('ListJobs', alice, secure())).to.equal(undefined);
    expect(refusal('ListNodes', anon, secure())).to.be.instanceOf(UnauthenticatedError);
    expect(refusal('ListNodes', alice, secure())).to.equal(undefined);
  });
});

describe('master core: AM attempt tokens', () => {
  let n = 0;
  const mint = () => {
    n += 1;
    return { token: `tok-${n}`, hash: `hash-${n}` };
  };

  it('each attempt gets a fresh token; the grants carry its hash; an older attempt is known as older', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }], config: { mintAmToken: mint } });
    h.submit(mockSpec({ id: 'tok' }));
    const first = h.core.getJob('tok');
    expect(first.amAttempt).to.equal(1);
    expect(first.amToken).to.be.a('string');
    const hash1 = first.amTokenHash!;
    expect(h.agents.get('n1')?.grants.every((g) => g.appId !== 'tok' || g.amTokenHash === hash1)).to.equal(true);
    expect(amTokenAttempt(first, hash1)).to.equal(1);
    // The AM's process is gone (its agent lists none past the launch grace): attempt 2.
    for (let t = 0; t < 16; t++) {
      h.advance(1000);
      h.heartbeat('n1', { amWorkers: [] });
      h.tick();
    }
    const second = h.core.getJob('tok');
    expect(second.amAttempt).to.equal(2);
    expect(second.amTokenHash).to.not.equal(hash1);
    expect(second.retiredAmTokenHashes).to.deep.equal([hash1]);
    expect(amTokenAttempt(second, second.amTokenHash!)).to.equal(2);
    expect(amTokenAttempt(second, hash1)).to.equal(1);
    expect(amTokenAttempt(second, 'hash-unknown')).to.equal(undefined);
    const grants = h.agents.get('n1')?.grants.filter((g) => g.appId === 'tok') ?? [];
    expect(grants.length).to.be.greaterThan(0);
    for (const g of grants) expect(g).to.include({ amAttempt: 2, amTokenHash: second.amTokenHash });
  });

  it('a master that mints none (simulators) leaves attempts without tokens', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
    h.submit(mockSpec({ id: 'plain' }));
    expect(h.core.getJob('plain').amTokenHash).to.equal(undefined);
  });

  it('a submission records its owner', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
    h.core.submitJob(mockSpec({ id: 'owned' }), h.now, 'alice');
    expect(h.core.getJob('owned').owner).to.equal('alice');
  });
});

describe('authz: external schedulers (SchedulerService)', () => {
  it('admins register for any scope; users only for their own quota groups; anonymous only on an insecure cluster', () => {
    expect(() => authorizeScheduler('Watch', admin, false, 'gold')).to.not.throw();
    expect(() => authorizeScheduler('Watch', bob, false, 'gold')).to.not.throw();
    expect(() => authorizeScheduler('Watch', bob, false, 'default')).to.throw(
      PermissionDeniedError,
      /bob may schedule only for its own quota groups \(gold\), not default/,
    );
    expect(() => authorizeScheduler('Watch', alice, false, undefined)).to.throw(PermissionDeniedError, /not an unknown testbed/);
    expect(() => authorizeScheduler('Watch', agentN1, false, 'default')).to.throw(PermissionDeniedError);
    expect(() => authorizeScheduler('Watch', anon, false, 'default')).to.throw(UnauthenticatedError);
    expect(() => authorizeScheduler('Watch', anon, true, 'default')).to.not.throw();
  });
});
