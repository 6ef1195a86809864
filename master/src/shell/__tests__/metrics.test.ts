/**
 * The master's /metrics (memory store, in process): leadership, epoch, nodes and jobs by state,
 * the first takeover's phases and gRPC handling time; the endpoint is off without metricsListen.
 * (A job's grants and store writes: test/src/integration/metrics.test.ts.)
 */
import { expect } from 'chai';
import * as http from 'node:http';
import { nullLogger } from '@fuxi/common';
import { connect } from '@fuxi/rpc';
import { loadFuxiProto } from '@fuxi/proto';
import { defaultConfig } from '../config.js';
import { MasterServer } from '../master-server.js';

function scrape(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`HTTP ${res.statusCode}`))));
      })
      .on('error', reject);
  });
}

/** The value of the sample `name{labels}` (labels as printed), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('master: Prometheus metrics', function () {
  this.timeout(20_000);
  const masters: MasterServer[] = [];
  after(async () => {
    for (const m of masters.splice(0)) await m.stop().catch(() => undefined);
  });

  it('serves leadership, epoch, jobs, takeover phases and gRPC times', async () => {
    const m = new MasterServer(
      { ...defaultConfig(['true']), listen: '127.0.0.1:0', store: 'memory', metricsListen: '127.0.0.1:0', recoveryDeadlineMs: 200 },
      nullLogger,
    );
    masters.push(m);
    await m.start();
    expect(m.metricsUrl).to.match(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const client = connect(loadFuxiProto().MasterService, m.address);
    try {
      await client.ListJobs({});
      await new Promise((r) => setTimeout(r, 400)); // the aggregation window of the first takeover
      const text = await scrape(m.metricsUrl);
      expect(sample(text, 'fuxi_master_leader')).to.equal(1);
      expect(sample(text, 'fuxi_master_epoch')).to.equal(Number(m.epoch));
      expect(sample(text, 'fuxi_master_failover_phase_seconds_count{phase="load"}')).to.equal(1);
      expect(sample(text, 'fuxi_master_failover_phase_seconds_count{phase="total"}')).to.equal(1);
      expect(text).to.contain('# TYPE fuxi_master_grants_total counter');
      expect(text).to.contain('# TYPE fuxi_master_request_to_grant_seconds histogram');
      expect(sample(text, 'fuxi_master_nodes{state="healthy"}')).to.equal(0);
      expect(sample(text, 'fuxi_master_jobs{state="running"}')).to.equal(0);
      expect(sample(text, 'fuxi_grpc_server_handled_total{service="fuxi.v1.MasterService",method="ListJobs",code="OK"}')).to.equal(1);
      expect(text).to.contain('process_cpu_seconds_total');
    } finally {
      client.close();
    }
  });

  it('serves nothing without metricsListen', async () => {
    const m = new MasterServer({ ...defaultConfig(['true']), listen: '127.0.0.1:0', store: 'memory' }, nullLogger);
    masters.push(m);
    await m.start();
    expect(m.metricsUrl).to.equal('');
  });
});
