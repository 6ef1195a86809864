/**
 * Which node a caller may act as: over mutual TLS an agent's certificate names its node (CN = node
 * id, O = `agent`), so RegisterAgent, Heartbeat, ReportAgentState and WatchGrants for node B from
 * a certificate for node A are refused. A plaintext call (the cluster runs `insecure: true`) has no
 * certificate to check.
 */
import { PermissionDeniedError } from '@fuxi/common';
import type { PeerIdentity } from '@fuxi/rpc';

export const AGENT_ROLE = 'agent';

/** Throws PERMISSION_DENIED naming the node and the certificate when `peer` may not act as `nodeId`. */
export function checkAgentPeer(peer: PeerIdentity | undefined, nodeId: string, method: string): void {
  if (!peer) return;
  if (peer.role !== AGENT_ROLE) {
    throw new PermissionDeniedError(`${method} for node "${nodeId}" refused: certificate "${peer.name}" has role "${peer.role ?? ''}", not "${AGENT_ROLE}"`, {
      node: nodeId,
      certificate: peer.name,
    });
  }
  if (peer.name !== nodeId) {
    throw new PermissionDeniedError(`${method} for node "${nodeId}" refused: the certificate names node "${peer.name}"`, {
      node: nodeId,
      certificate: peer.name,
    });
  }
}
