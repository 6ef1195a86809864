/**
 * The agent's own certificate must name this node (CN = node id, O = agent): the master accepts
 * it only as that node, so a mismatch would be refused at every registration. Caught at start
 * instead, naming the setting.
 */
import { InvalidArgumentError } from '@fuxi/common';
import type { PeerIdentity } from '@fuxi/rpc';

export function checkOwnCertificate(identity: PeerIdentity | undefined, nodeId: string): void {
  if (!identity) return;
  if (identity.role !== 'agent') throw new InvalidArgumentError('tls.cert', `has role (O) "${identity.role ?? ''}"; an agent's certificate has O=agent`);
  if (identity.name !== nodeId)
    throw new InvalidArgumentError('tls.cert', `names node "${identity.name}" (CN) but this agent is "${nodeId}" (nodeId): the master would refuse it`);
}
