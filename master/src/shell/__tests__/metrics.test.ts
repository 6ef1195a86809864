/**
 * The master's /metrics (memory store, in process): leadership, epoch, nodes and jobs by state,
 * the first takeover's phases and gRPC handling time; the endpoint is off without metricsListen;
 * on etcd, a standby shows no leadership and no cluster state, and a takeover's phases.
 * (A job's grants and store writes: test/src/integration/metrics.test.ts.)
 */
import { expect } from 'chai';
import * as http from 'node:http';
import { nullLogger } from '@fuxi/common';
import { connect } from '@fuxi/rpc';
import { loadFuxiProto } from '@fuxi/proto';
import { startEtcd } from '@fuxi/store/etcd-fixture';
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

async function until(fn: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await fn().catch(() => false))) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
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
      // A master's start is a takeover: FM_CRASH posted and resolved once; the FSM back in S0.
      expect(sample(text, 'fuxi_master_fault_recovery_seconds_count{kind="FM_CRASH",phase="total"}')).to.equal(1);
      expect(sample(text, 'fuxi_master_fault_fsm_state{state="S0"}')).to.equal(1);
      expect(sample(text, 'fuxi_master_fault_fsm_state{state="S1"}')).to.equal(0);
      expect(sample(text, 'fuxi_master_faults_open{kind="FM_CRASH"}')).to.equal(0);
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

  it('on etcd: a standby is not the leader and shows no cluster state; taking over, it is, with its phases', async function () {
    this.timeout(60_000);
    const etcd = await startEtcd();
    try {
      const cfg = {
        ...defaultConfig(['true']),
        listen: '127.0.0.1:0',
        metricsListen: '127.0.0.1:0',
        store: 'etcd' as const,
        etcdEndpoints: [etcd.endpoint],
        etcdPrefix: `/metrics-${process.pid}/`,
        leaseTtlSec: 2,
        recoveryDeadlineMs: 300,
      };
      const a = new MasterServer(cfg, nullLogger);
      masters.push(a);
      await a.start();
      await until(async () => sample(await scrape(a.metricsUrl), 'fuxi_master_leader') === 1);
      const b = new MasterServer(cfg, nullLogger);
      masters.push(b);
      await b.start();
      const standby = await scrape(b.metricsUrl);
      expect(sample(standby, 'fuxi_master_leader')).to.equal(0);
      expect(sample(standby, 'fuxi_master_epoch')).to.equal(0);
      expect(standby).to.not.match(/^fuxi_master_nodes\{/m);
      expect(sample(standby, 'fuxi_master_failover_phase_seconds_count{phase="load"}')).to.equal(undefined);
      const epochA = sample(await scrape(a.metricsUrl), 'fuxi_master_epoch')!;
      await a.stop();
      await until(
        async () => sample(await scrape(b.metricsUrl), 'fuxi_master_recovering') === 0 && sample(await scrape(b.metricsUrl), 'fuxi_master_leader') === 1,
      );
      const leader = await scrape(b.metricsUrl);
      expect(sample(leader, 'fuxi_master_epoch')).to.be.greaterThan(epochA);
      expect(sample(leader, 'fuxi_master_failover_phase_seconds_count{phase="load"}')).to.equal(1);
      expect(sample(leader, 'fuxi_master_failover_phase_seconds_count{phase="total"}')).to.equal(1);
    } finally {
      for (const m of masters.splice(0)) await m.stop().catch(() => undefined);
      await etcd.stop();
    }
  });
});
