/**
 * The master's gRPC clients to agents and application masters, one per address, opened on first
 * use and closed together.
 */
import {
  loadFuxiProto,
  type AgentServiceDefinition,
  type AppMasterServiceDefinition,
  type StartWorkersRequest,
  type StartWorkersResponse__Output,
  type StopWorkersRequest,
  type StopWorkersResponse__Output,
} from '@fuxi/proto';
import { AGENT_BATCHED, callBatched, connect, type CallOptions, type TypedClient } from '@fuxi/rpc';

export class Peers {
  private readonly agents = new Map<string, TypedClient<AgentServiceDefinition>>();
  private readonly ams = new Map<string, TypedClient<AppMasterServiceDefinition>>();
  private readonly proto = loadFuxiProto();

  agent(address: string): TypedClient<AgentServiceDefinition> {
    let c = this.agents.get(address);
    if (!c) {
      c = connect(this.proto.AgentService, address);
      this.agents.set(address, c);
    }
    return c;
  }

  /**
   * StartWorkers or StopWorkers to the agent at `address`, in one `Calls` batch with the others to
   * that agent made meanwhile (AM launches, stops of killed jobs; call-batch.ts).
   */
  agentCall(address: string, method: 'StartWorkers', req: StartWorkersRequest, opts: CallOptions): Promise<StartWorkersResponse__Output>;
  agentCall(address: string, method: 'StopWorkers', req: StopWorkersRequest, opts: CallOptions): Promise<StopWorkersResponse__Output>;
  agentCall(address: string, method: 'StartWorkers' | 'StopWorkers', req: object, opts: CallOptions): Promise<unknown> {
    return callBatched(this.agent(address), this.proto.AgentService.service, AGENT_BATCHED, method, req, opts);
  }

  am(address: string): TypedClient<AppMasterServiceDefinition> {
    let c = this.ams.get(address);
    if (!c) {
      c = connect(this.proto.AppMasterService, address);
      this.ams.set(address, c);
    }
    return c;
  }

  close(): void {
    for (const c of [...this.agents.values(), ...this.ams.values()]) c.close();
    this.agents.clear();
    this.ams.clear();
  }
}
