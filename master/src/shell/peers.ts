/**
 * The master's gRPC clients to agents and application masters, one per address, opened on first
 * use and closed together. An AM's client is one per address too (`host:port#route` at an AM host:
 * a route on the host's one channel), the newest MAX_AM_CLIENTS of them kept: a client per job
 * ever hosted would grow without end.
 */
import {
  loadFuxiProto,
  type AgentServiceDefinition,
  type AppMasterServiceDefinition,
  type StartWorkersRequest,
  type StartWorkersResponse__Output,
  type StopWorkersRequest,
  type StopWorkersResponse__Output,
  type UpdateAssignmentsRequest,
  type UpdateAssignmentsResponse__Output,
} from '@fuxi/proto';
import { AGENT_BATCHED, ASSIGNMENTS_BATCHED, batcherFor, callBatched, connect, type CallOptions, type TypedClient } from '@fuxi/rpc';

/** AM clients kept (the oldest made is closed beyond it; one is made again on its next use). */
export const MAX_AM_CLIENTS = 4096;

export class Peers {
  private readonly agents = new Map<string, TypedClient<AgentServiceDefinition>>();
  private readonly ams = new Map<string, TypedClient<AppMasterServiceDefinition>>();
  private readonly proto = loadFuxiProto();

  constructor(private readonly opts: { maxAmClients?: number } = {}) {}

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
      if (this.ams.size > (this.opts.maxAmClients ?? MAX_AM_CLIENTS)) {
        const [oldest, client] = this.ams.entries().next().value as [string, TypedClient<AppMasterServiceDefinition>];
        this.ams.delete(oldest);
        client.close();
      }
    }
    return c;
  }

  /**
   * UpdateAssignments to the AM at `address`, in one `Calls` batch with the other AMs' pushes to
   * the same server made meanwhile (an AM host's AMs: call-batch.ts). One batch is out per server
   * at a time, so an AM gets its pushes in the order they were made (a delta out of order is
   * ignored until a full table comes); calls made meanwhile go in the next batch.
   */
  assignAm(address: string, req: UpdateAssignmentsRequest, opts: CallOptions): Promise<UpdateAssignmentsResponse__Output> {
    const client = this.am(address);
    return batcherFor(client, this.proto.AppMasterService.service, ASSIGNMENTS_BATCHED, { batchMethod: 'Calls', maxInFlight: 1 }).call(
      client,
      'UpdateAssignments',
      req,
      opts,
      () => client.UpdateAssignments(req, opts),
    );
  }

  close(): void {
    for (const c of [...this.agents.values(), ...this.ams.values()]) c.close();
    this.agents.clear();
    this.ams.clear();
  }
}
