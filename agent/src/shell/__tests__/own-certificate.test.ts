import { expect } from 'chai';
import { InvalidArgumentError } from '@fuxi/common';
import { checkOwnCertificate } from '../own-certificate.js';

describe("the agent's own certificate", () => {
  it('must name this node with role agent (plaintext: nothing to check)', () => {
    expect(() => checkOwnCertificate({ name: 'node-1', role: 'agent', sans: [] }, 'node-1')).to.not.throw();
    expect(() => checkOwnCertificate(undefined, 'node-1')).to.not.throw();
    expect(() => checkOwnCertificate({ name: 'node-2', role: 'agent', sans: [] }, 'node-1')).to.throw(
      InvalidArgumentError,
      'tls.cert: names node "node-2" (CN) but this agent is "node-1" (nodeId): the master would refuse it',
    );
    expect(() => checkOwnCertificate({ name: 'node-1', role: 'admin', sans: [] }, 'node-1')).to.throw(
      InvalidArgumentError,
      /^tls\.cert: has role \(O\) "admin"/,
    );
  });
});
