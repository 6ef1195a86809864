import { expect } from 'chai';
import { PermissionDeniedError } from '@fuxi/common';
import { checkAgentPeer } from '../agent-identity.js';

describe('agent identity (the certificate names the node)', () => {
  it('lets an agent certificate act as its own node, and a plaintext call through', () => {
    expect(() => checkAgentPeer({ name: 'node-a', role: 'agent', sans: [] }, 'node-a', 'RegisterAgent')).to.not.throw();
    expect(() => checkAgentPeer(undefined, 'node-b', 'RegisterAgent')).to.not.throw();
  });

  it('refuses a certificate for node A registering as B, naming both', () => {
    expect(() => checkAgentPeer({ name: 'node-a', role: 'agent', sans: [] }, 'node-b', 'RegisterAgent'))
      .to.throw(PermissionDeniedError, 'RegisterAgent for node "node-b" refused: the certificate names node "node-a"')
      .with.property('code', 'PERMISSION_DENIED');
  });

  it('refuses a certificate whose role is not agent (an admin, a user, none)', () => {
    expect(() => checkAgentPeer({ name: 'node-a', role: 'admin', sans: [] }, 'node-a', 'Heartbeat')).to.throw(
      PermissionDeniedError,
      'Heartbeat for node "node-a" refused: certificate "node-a" has role "admin", not "agent"',
    );
    expect(() => checkAgentPeer({ name: 'node-a', sans: [] }, 'node-a', 'Heartbeat')).to.throw(PermissionDeniedError, /role ""/);
  });
});
