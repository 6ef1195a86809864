/**
 * Connectivity-aware placement at the master's edge: the mapping of placement constraints (present
 * replaces, absent leaves) and of the graph for AMs, and over gRPC against a real MasterServer
 * (memory store): the graph in UpdateRequests answers while the AM's version is stale, and a job's
 * network kept as submitted.
 */
import { expect } from 'chai';
import { normalizeJobSpec, nullLogger } from '@fuxi/common';
import { loadFuxiProto, type MasterServiceDefinition, type ReportAppStateRequest__Output, type UpdateRequestsRequest__Output } from '@fuxi/proto';
import { connect, jobSpecToProto, tokenHash, type TypedClient } from '@fuxi/rpc';

const AM_TOKEN = 'the-am-token-of-this-test';
import { defaultConfig } from '../config.js';
import { MasterServer } from '../master-server.js';
import { appReportFromWire, connectivityToWire, updateRequestsFromWire } from '../wire.js';

function updateRequest(over: Partial<UpdateRequestsRequest__Output> = {}): UpdateRequestsRequest__Output {
  return {
    appId: 'wc',
    amAttempt: 1,
    seq: '3',
    units: [],
    deltas: [],
    assignmentSeq: '0',
    progress: [],
    connectivityVersion: '0',
    constraints: null,
    ...over,
  };
}

describe('master wire: placement constraints and the graph', () => {
  it('passes constraints into the core only when the AM sent them (an empty set clears)', () => {
    expect(updateRequestsFromWire(updateRequest())).to.not.have.property('constraints');
    const sent = updateRequestsFromWire(updateRequest({ connectivityVersion: '7000000003', constraints: { reach: ['a1'], avoid: ['a2', 'a3'] } }));
    expect(sent.constraints).to.deep.equal({ reach: ['a1'], avoid: ['a2', 'a3'] });
    expect(sent.connectivityVersion).to.equal(7_000_000_003);
    expect(updateRequestsFromWire(updateRequest({ constraints: { reach: [], avoid: [] } })).constraints).to.deep.equal({ reach: [], avoid: [] });
  });

  it('takes the constraints of a state report (field 7)', () => {
    const report: ReportAppStateRequest__Output = {
      appId: 'wc',
      amAttempt: 2,
      units: [],
      requests: [],
      assignments: [],
      address: 'am:1',
      constraints: { reach: [], avoid: ['a4'] },
      predictedBadHosts: [],
    };
    expect(appReportFromWire(report).constraints).to.deep.equal({ reach: [], avoid: ['a4'] });
    expect(appReportFromWire({ ...report, constraints: null })).to.not.have.property('constraints');
  });

  it('takes the hosts failure prediction moved the app off (field 8), only when there are some', () => {
    const report: ReportAppStateRequest__Output = {
      appId: 'wc',
      amAttempt: 2,
      units: [],
      requests: [],
      assignments: [],
      address: 'am:1',
      constraints: null,
      predictedBadHosts: ['a2', 'a5'],
    };
    expect(appReportFromWire(report).predictedBadHosts).to.deep.equal(['a2', 'a5']);
    expect(appReportFromWire({ ...report, predictedBadHosts: [] })).to.not.have.property('predictedBadHosts');
  });

  it('sends the graph as Connectivity (int64 as decimal strings), nothing when the AM is current', () => {
    expect(connectivityToWire(undefined)).to.equal(null);
    expect(connectivityToWire({ version: 7e9 + 2, brokenLinks: [{ a: 'a1', b: 'a2', sinceMs: 1234 }], partitioned: ['a4'] })).to.deep.equal({
      version: '7000000002',
      brokenLinks: [{ a: 'a1', b: 'a2', sinceMs: '1234' }],
      partitionedFromMaster: ['a4'],
      draining: [],
    });
  });
});

describe('master: the graph in UpdateRequests answers over gRPC', function () {
  this.timeout(20_000);
  let server: MasterServer;
  let client: TypedClient<MasterServiceDefinition>;

  afterEach(async () => {
    client.close();
    await server.stop();
  });

  async function start(connectivityAware: boolean): Promise<void> {
    // The test is the app's AM: it knows the token the master gives the attempt.
    server = new MasterServer({ ...defaultConfig(['true']), listen: '127.0.0.1:0', store: 'memory', schedulingIntervalMs: 0, connectivityAware }, nullLogger, {
      mintAmToken: () => ({ token: AM_TOKEN, hash: tokenHash(AM_TOKEN) }),
    });
    await server.start();
    client = connect(loadFuxiProto().MasterService, server.address);
    const spec = normalizeJobSpec({
      id: 'wc',
      name: 'wc',
      network: 'independent',
      tasks: [{ name: 'map', instances: 4, resources: { cpu: 1, memory: 256 }, command: ['true'] }],
    });
    await client.SubmitJob({ spec: jobSpecToProto(spec) });
  }

  const call = (seq: number, connectivityVersion: string) =>
    client.UpdateRequests(
      {
        appId: 'wc',
        amAttempt: 1,
        seq: String(seq),
        units: [],
        deltas: [],
        assignmentSeq: '0',
        progress: [],
        connectivityVersion,
        constraints: { reach: [], avoid: ['nowhere'] },
      },
      { token: AM_TOKEN },
    );

  it("answers a stale version with the master's graph, a current one with none", async () => {
    await start(true);
    const first = await call(1, '0');
    expect(first.connectivity).to.not.equal(null);
    expect(first.connectivity?.brokenLinks).to.deep.equal([]);
    expect(first.connectivity?.partitionedFromMaster).to.deep.equal([]);
    const version = first.connectivity?.version ?? '';
    expect(Number(version)).to.be.greaterThan(0);
    expect((await call(2, version)).connectivity).to.equal(null);
    expect((await client.GetJob({ jobId: 'wc' })).job?.spec?.network).to.equal('independent');
  });

  it('sends no graph with connectivityAware off', async () => {
    await start(false);
    expect((await call(1, '0')).connectivity).to.equal(null);
  });
});
