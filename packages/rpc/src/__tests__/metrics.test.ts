import { expect } from 'chai';
import * as http from 'node:http';
import { InvalidArgumentError, NotFoundError, nullLogger } from '@fuxi/common';
import { connect, implement, startServer } from '../index.js';
import { loadFuxiProto } from '@fuxi/proto';
import { DaemonMetrics, parseMetricsListen, startMetricsServer } from '../metrics.js';

function get(url: string): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }));
      })
      .on('error', reject);
  });
}

describe('metrics', () => {
  describe('parseMetricsListen', () => {
    it('takes host:port, [v6]:port and "" (off)', () => {
      expect(parseMetricsListen('metricsListen', '127.0.0.1:9100')).to.equal('127.0.0.1:9100');
      expect(parseMetricsListen('metricsListen', '[::1]:0')).to.equal('[::1]:0');
      expect(parseMetricsListen('metricsListen', 'node1:9100')).to.equal('node1:9100');
      expect(parseMetricsListen('metricsListen', '')).to.equal('');
      expect(parseMetricsListen('metricsListen', undefined)).to.equal('');
    });

    it('names the field in what it refuses', () => {
      for (const bad of ['9100', 'host:', 'a b:1', 'host:70000', 42, 'http://x:1']) {
        const e = (() => {
          try {
            parseMetricsListen('agent.yaml: metricsListen', bad);
          } catch (err) {
            return err;
          }
          return undefined;
        })();
        expect(e, String(bad)).to.be.instanceOf(InvalidArgumentError);
        expect((e as Error).message).to.contain('agent.yaml: metricsListen');
      }
    });
  });

  it('serves the registry at GET /metrics on a free port, 404 elsewhere', async () => {
    const m = new DaemonMetrics({ processMetrics: false });
    const srv = await startMetricsServer({ bind: '127.0.0.1:0', registry: m.registry, log: nullLogger });
    try {
      expect(srv.port).to.be.greaterThan(0);
      expect(srv.url).to.equal(`http://127.0.0.1:${srv.port}/metrics`);
      const ok = await get(srv.url);
      expect(ok.status).to.equal(200);
      expect(ok.type).to.match(/^text\/plain/);
      expect(ok.body).to.contain('# TYPE fuxi_grpc_server_handling_seconds histogram');
      expect((await get(`http://127.0.0.1:${srv.port}/other`)).status).to.equal(404);
    } finally {
      await srv.close();
    }
  });

  it('times every gRPC call by service and method, and counts it by status code', async () => {
    const m = new DaemonMetrics({ processMetrics: false });
    const fuxi = loadFuxiProto();
    const def = fuxi.MasterService.service;
    const impl = Object.fromEntries(
      Object.keys(def).map((k) => [
        k,
        async () => {
          throw new Error('not implemented');
        },
      ]),
    ) as Record<string, unknown>;
    impl.GetJob = async (req: { jobId: string }) => {
      if (req.jobId !== 'j1') throw new NotFoundError('job', req.jobId);
      return { job: { jobId: 'j1' } };
    };
    const s = await startServer({
      bind: '127.0.0.1:0',
      services: [{ name: 'fuxi.v1.MasterService', definition: def, handlers: implement(def, impl as never, nullLogger, m.grpc) }],
      log: nullLogger,
    });
    const c = connect(fuxi.MasterService, s.address);
    try {
      await c.GetJob({ jobId: 'j1' });
      await c.GetJob({ jobId: 'j1' });
      await c.GetJob({ jobId: 'nope' }).catch(() => undefined);
      const text = await m.registry.metrics();
      expect(text).to.contain('fuxi_grpc_server_handling_seconds_count{service="fuxi.v1.MasterService",method="GetJob"} 3');
      expect(text).to.contain('fuxi_grpc_server_handled_total{service="fuxi.v1.MasterService",method="GetJob",code="OK"} 2');
      expect(text).to.contain('fuxi_grpc_server_handled_total{service="fuxi.v1.MasterService",method="GetJob",code="NOT_FOUND"} 1');
    } finally {
      c.close();
      await s.shutdown(100);
    }
  });
});
