import { expect } from 'chai';
import { cwdProblem, InvalidArgumentError } from '@fuxi/common';
import { decideWorkerIdentity, describeIdentity, insideRoots, parsePasswd, userFor, workerEnv, WORKER_PATH, type UserEntry } from '../worker-identity.js';

const USERS = parsePasswd(
  ['root:x:0:0:root:/root:/bin/bash', 'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin', 'alice:x:1000:1000::/home/alice:/bin/sh'].join('\n'),
);
const lookup = (n: string): UserEntry | undefined => USERS.get(n);
const base = { agentUid: 0, agentUser: 'root', workerUser: '', workerUsers: {}, allowRootWorkers: false };

function fieldOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).to.be.instanceOf(InvalidArgumentError);
    return (e as InvalidArgumentError).field;
  }
  return 'no error';
}

describe('worker identity', () => {
  it('runs job processes as nobody by default when the agent is root', () => {
    const id = decideWorkerIdentity(base, lookup);
    expect(id.mode).to.equal('switch');
    expect(userFor(id, 'any')).to.deep.equal({ name: 'nobody', uid: 65534, gid: 65534 });
    expect(describeIdentity(id)).to.equal('nobody');
  });

  it('picks the quota group user, else the default', () => {
    const id = decideWorkerIdentity({ ...base, workerUsers: { research: 'alice' } }, lookup);
    expect(userFor(id, 'research').uid).to.equal(1000);
    expect(userFor(id, 'default').uid).to.equal(65534);
    expect(userFor(id, '').uid).to.equal(65534);
    expect(describeIdentity(id)).to.equal('nobody (research=alice)');
  });

  it('refuses uid 0 unless allowRootWorkers, naming the key', () => {
    expect(fieldOf(() => decideWorkerIdentity({ ...base, workerUser: 'root' }, lookup))).to.equal('workerUser');
    expect(fieldOf(() => decideWorkerIdentity({ ...base, workerUsers: { ops: '0' } }, lookup))).to.equal('workerUsers.ops');
    expect(decideWorkerIdentity({ ...base, workerUser: 'root', allowRootWorkers: true }, lookup).defaultUser.uid).to.equal(0);
  });

  it('refuses an unknown user, naming the key', () => {
    expect(fieldOf(() => decideWorkerIdentity({ ...base, workerUser: 'ghost' }, lookup))).to.equal('workerUser');
  });

  it('runs everything as the agent when it is not root, and says so', () => {
    const id = decideWorkerIdentity({ ...base, agentUid: 1000, agentUser: 'alice', workerUser: 'nobody' }, lookup);
    expect(id.mode).to.equal('same');
    expect(describeIdentity(id)).to.equal('alice (same: the agent is not root)');
  });

  it('builds the environment from nothing', () => {
    const env = workerEnv('/w/app/x', '', { GREETING: 'hi', FUXI_APP_ID: 'a' }, { FUXI_OUTPUT_DIR: '/w/app/x/out' });
    expect(env).to.deep.equal({ PATH: WORKER_PATH, HOME: '/w/app/x', LANG: 'C.UTF-8', GREETING: 'hi', FUXI_APP_ID: 'a', FUXI_OUTPUT_DIR: '/w/app/x/out' });
  });

  it('tells paths inside roots from the ones outside', () => {
    expect(insideRoots('/w/a', ['/w/a'])).to.equal(true);
    expect(insideRoots('/w/a/b', ['/w/a'])).to.equal(true);
    expect(insideRoots('/w/ab', ['/w/a'])).to.equal(false);
    expect(insideRoots('/etc', ['/w/a', '/data'])).to.equal(false);
  });

  it('finds a relative cwd that climbs out, statically', () => {
    expect(cwdProblem('../../etc')).to.match(/climbs out/);
    expect(cwdProblem('a/../../etc')).to.match(/climbs out/);
    expect(cwdProblem('a/../b')).to.equal(undefined);
    expect(cwdProblem('')).to.equal(undefined);
    expect(cwdProblem('/data/x')).to.equal(undefined);
  });
});
