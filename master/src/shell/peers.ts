/**
 * The master's gRPC clients to agents and application masters, one per address, opened on first
 * use and closed together.
 */
import { loadFuxiProto, type AgentServiceDefinition, type AppMasterServiceDefinition } from '@fuxi/proto';
import { connect, type TypedClient } from '@fuxi/rpc';

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
