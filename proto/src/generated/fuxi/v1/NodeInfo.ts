// Original file: proto/fuxi/v1/common.proto

import type { Resource as _fuxi_v1_Resource, Resource__Output as _fuxi_v1_Resource__Output } from '../../fuxi/v1/Resource.js';

/**
 * A machine as it registers itself with the master.
 */
export interface NodeInfo {
  'nodeId'?: (string);
  /**
   * host:port of the node agent's AgentService.
   */
  'address'?: (string);
  'rack'?: (string);
  'capacity'?: (_fuxi_v1_Resource | null);
  'labels'?: ({[key: string]: string});
  /**
   * Linux boot id of the host; lets receivers tell a rebooted machine apart.
   */
  'bootId'?: (string);
  /**
   * UDP port of the agent's probe responder, on the host of `address` (0: the agent does not
   * probe or answer probes, so no peer probes it).
   */
  'probePort'?: (number);
  /**
   * How the agent holds workers to their grants: "cgroup-v2", "cgroup-v1" (a cgroup per worker
   * with memory and CPU limits), "rss" (memory only: RSS sampled, killed past the grant), "off";
   * empty from agents that do not say.
   */
  'resourceEnforcement'?: (string);
  /**
   * Who job processes run as: a user name, with "(same: the agent is not root)" when the agent
   * cannot switch users; empty from agents that do not say.
   */
  'workerUser'?: (string);
}

/**
 * A machine as it registers itself with the master.
 */
export interface NodeInfo__Output {
  'nodeId': (string);
  /**
   * host:port of the node agent's AgentService.
   */
  'address': (string);
  'rack': (string);
  'capacity': (_fuxi_v1_Resource__Output | null);
  'labels': ({[key: string]: string});
  /**
   * Linux boot id of the host; lets receivers tell a rebooted machine apart.
   */
  'bootId': (string);
  /**
   * UDP port of the agent's probe responder, on the host of `address` (0: the agent does not
   * probe or answer probes, so no peer probes it).
   */
  'probePort': (number);
  /**
   * How the agent holds workers to their grants: "cgroup-v2", "cgroup-v1" (a cgroup per worker
   * with memory and CPU limits), "rss" (memory only: RSS sampled, killed past the grant), "off";
   * empty from agents that do not say.
   */
  'resourceEnforcement': (string);
  /**
   * Who job processes run as: a user name, with "(same: the agent is not root)" when the agent
   * cannot switch users; empty from agents that do not say.
   */
  'workerUser': (string);
}
