/**
 * The master's dashboard over HTTP (in process): the page (one file, a content security policy,
 * nothing parsed as HTML), the JSON routes, 404s, the bounded event stream; and on etcd a
 * standby's redirect to the leader's dashboard, or its page saying who leads when the leader
 * serves none. (In a real browser against a cluster: test/src/integration/dashboard.test.ts.)
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import { nullLogger } from '@fuxi/common';
import { connect, jobSpecToProto } from '@fuxi/rpc';
import { loadFuxiProto } from '@fuxi/proto';
import { startEtcd } from '@fuxi/store/etcd-fixture';
import { normalizeJobSpec } from '@fuxi/common';
import { defaultConfig } from '../config.js';
import { escapeHtml, MAX_EVENT_CLIENTS } from '../dashboard.js';
import { MasterServer } from '../master-server.js';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function get(url: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      })
      .on('error', reject);
  });
}

/** Opens `/events` and resolves with the request once its headers are in (status 200 or not). */
function openEvents(url: string): Promise<{ req: http.ClientRequest; status: number }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      res.resume();
      resolve({ req, status: res.statusCode ?? 0 });
    });
    req.on('error', (e) => (e.message.includes('socket hang up') ? undefined : reject(e)));
  });
}

async function until(fn: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await fn().catch(() => false))) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('master: the web dashboard', function () {
  this.timeout(20_000);
  const masters: MasterServer[] = [];
  after(async () => {
    for (const m of masters.splice(0)) await m.stop().catch(() => undefined);
  });

  it('serves the page, the JSON views, 404s and a bounded event stream on the metrics port', async () => {
    const m = new MasterServer({ ...defaultConfig(['true']), listen: '127.0.0.1:0', store: 'memory', metricsListen: '127.0.0.1:0' }, nullLogger);
    masters.push(m);
    await m.start();
    expect(m.dashboardUrl).to.equal(m.metricsUrl.replace(/metrics$/, ''));
    const base = m.dashboardUrl;

    const page = await get(base);
    expect(page.status).to.equal(200);
    expect(page.headers['content-type']).to.equal('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).to.include("default-src 'self'");
    expect(page.body).to.include("table('nodes-table'");
    // Data goes in with textContent: nothing in the page parses strings as HTML.
    expect(page.body).to.not.match(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
    expect(page.body).to.not.match(/<script[^>]+src=|<link[^>]+href=|https?:\/\//);

    const client = connect(loadFuxiProto().MasterService, m.address);
    const name = '<img src=x onerror=alert(1)>';
    try {
      const spec = normalizeJobSpec({ id: 'dash-1', name, tasks: [{ name: 'map', instances: 2, resources: { cpu: 1, memory: 64 }, command: ['true'] }] });
      await client.SubmitJob({ spec: jobSpecToProto(spec) });
      await client.GetClusterStatus({}).then((s) => expect(s.dashboardUrl).to.equal(base));
    } finally {
      client.close();
    }

    const summary = JSON.parse((await get(`${base}api/summary`)).body);
    expect(summary).to.include({ role: 'leader', address: m.address, epoch: m.epoch, fsmState: 'S0' });
    expect(summary.jobs.submitted + summary.jobs.running).to.equal(1);
    expect(summary.timeline.map((t: { what: string }) => t.what)).to.include('FSM S0 -> S1');

    expect(JSON.parse((await get(`${base}api/nodes`)).body)).to.deep.equal({ nodes: [] });
    const jobs = JSON.parse((await get(`${base}api/jobs?q=IMG`)).body);
    expect(jobs.total).to.equal(1);
    expect(jobs.jobs[0]).to.include({ jobId: 'dash-1', name });
    expect(JSON.parse((await get(`${base}api/jobs?state=failed`)).body).total).to.equal(0);
    const one = await get(`${base}api/jobs/dash-1`);
    expect(one.status).to.equal(200);
    expect(one.headers['content-type']).to.equal('application/json; charset=utf-8');
    expect(JSON.parse(one.body).job.tasks).to.be.an('array');
    expect((await get(`${base}api/jobs/nope`)).status).to.equal(404);
    expect((await get(`${base}api/jobs/dash-1/logs/map.0.1`)).status).to.equal(404);
    expect((await get(`${base}elsewhere`)).status).to.equal(404);
    expect((await get(`${base}metrics`)).body).to.include('fuxi_master_leader 1');

    const streams = await Promise.all(Array.from({ length: MAX_EVENT_CLIENTS }, () => openEvents(`${base}events`)));
    try {
      expect(streams.every((s) => s.status === 200)).to.equal(true);
      const over = await get(`${base}events`);
      expect(over.status).to.equal(503);
    } finally {
      for (const s of streams) s.req.destroy();
    }
  });

  it('on etcd: a standby redirects to the leader dashboard, or says who leads when the leader serves none', async function () {
    this.timeout(60_000);
    const etcd = await startEtcd();
    try {
      const cfg = {
        ...defaultConfig(['true']),
        listen: '127.0.0.1:0',
        metricsListen: '127.0.0.1:0',
        store: 'etcd' as const,
        etcdEndpoints: [etcd.endpoint],
        etcdPrefix: `/dashboard-${process.pid}/`,
        leaseTtlSec: 2,
        recoveryDeadlineMs: 300,
      };
      const a = new MasterServer(cfg, nullLogger);
      masters.push(a);
      await a.start();
      await until(async () => (await get(`${a.dashboardUrl}api/summary`)).status === 200);
      const b = new MasterServer(cfg, nullLogger);
      masters.push(b);
      await b.start();
      await until(async () => (await get(`${b.dashboardUrl}api/nodes`)).status === 307);
      const moved = await get(`${b.dashboardUrl}api/jobs?state=running`);
      expect(moved.status).to.equal(307);
      expect(moved.headers.location).to.equal(`${a.dashboardUrl}api/jobs?state=running`);

      // A leader that serves no dashboard: the standby's page says who leads.
      const c = new MasterServer({ ...cfg, etcdPrefix: `/dashboard-quiet-${process.pid}/`, metricsListen: '' }, nullLogger);
      masters.push(c);
      await c.start();
      await until(async () => c.role === 'leader');
      const d = new MasterServer({ ...cfg, etcdPrefix: `/dashboard-quiet-${process.pid}/` }, nullLogger);
      masters.push(d);
      await d.start();
      await until(async () => (await get(d.dashboardUrl)).body.includes(c.address));
      const standby = await get(d.dashboardUrl);
      expect(standby.status).to.equal(503);
      expect(standby.body).to.include(`This master (${d.address}) is a standby. The leader is ${c.address}`);
      const api = await get(`${d.dashboardUrl}api/summary`);
      expect(api.status).to.equal(503);
      expect(JSON.parse(api.body)).to.include({ role: 'standby', leader: c.address });
    } finally {
      for (const m of masters.splice(0)) await m.stop().catch(() => undefined);
      await etcd.stop();
    }
  });

  it('escapes what the server-built standby page shows', () => {
    expect(escapeHtml(`<img src=x onerror="alert('1')">&`)).to.equal('&#60;img src=x onerror=&#34;alert(&#39;1&#39;)&#34;&#62;&#38;');
    // The page file the master ships is the one it serves.
    expect(readFileSync(new URL('../../../static/dashboard.html', import.meta.url), 'utf8')).to.include('<title>Fuxi dashboard</title>');
  });
});
