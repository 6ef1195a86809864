/**
 * The master's web dashboard in a real headless Chromium (Debian's `chromium`; `make chromium`
 * installs it): a local cluster with metrics on runs a job whose name is an HTML tag and whose
 * `quick` task is done while its `slow` task still runs; the page is loaded with `--dump-dom`
 * (`--virtual-time-budget` lets its fetches finish; `?live=0` leaves the event stream closed, which
 * would otherwise hold virtual time), and the DOM must hold the nodes table with every node and the
 * job with its progress, its name as text. The job page lists the instances with their hosts and
 * log links, a log link answers the worker's output, and `/events` says `changed`. A screenshot
 * goes to bench-results/dashboard.png.
 */
import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, type LocalCluster } from '@fuxi/deploy';
import { job, startCluster, stopCluster, until } from '../harness.js';

const REPO = join(BIN.master, '..', '..', '..', '..');
const CHROMIUM = process.env.FUXI_CHROMIUM ?? 'chromium';
const NAME = '<img src=x onerror=alert(1)>';

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

/** Runs Chromium headless on `url` with `args`; its own process group, killed by its pid after `timeoutMs`. */
function chromium(profile: string, url: string, args: string[], timeoutMs = 20_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      CHROMIUM,
      ['--headless=new', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', `--user-data-dir=${profile}`, '--virtual-time-budget=5000', ...args, url],
      { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.stderr.on('data', (d) => (err += String(d)));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {}
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`chromium ended with ${code ?? signal}: ${err.slice(-2000)}`));
    });
  });
}

/** The element with `id` and what follows it up to its closing `</table>` (the dumped DOM is serialized HTML). */
function tableById(dom: string, id: string): string {
  const start = dom.indexOf(`<table id="${id}">`);
  expect(start, `#${id} in the DOM`).to.be.at.least(0);
  return dom.slice(start, dom.indexOf('</table>', start));
}

/** The `<tr>` with attribute `attr="value"`. */
function rowOf(table: string, attr: string, value: string): string {
  const start = table.indexOf(`<tr ${attr}="${value}">`);
  expect(start, `row ${attr}=${value}`).to.be.at.least(0);
  return table.slice(start, table.indexOf('</tr>', start));
}

describe('dashboard: the master serves a live web page of the cluster', function () {
  this.timeout(90_000);
  let c: LocalCluster | undefined;
  let failed = false;
  let profile = '';
  let base = '';
  let jobId = '';

  before(async function () {
    if (spawnSync(CHROMIUM, ['--version'], { stdio: 'ignore' }).status !== 0) {
      throw new Error(`${CHROMIUM} is not installed: run \`make chromium\` (Debian's chromium package)`);
    }
    profile = mkdtempSync(join(tmpdir(), 'fuxi-it-dashboard-chromium-'));
    c = await startCluster('dashboard', { agents: 2, metrics: true });
    base = c.master.dashboardUrl!;
    expect(base).to.match(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const client = c.client();
    try {
      const spec = job({
        name: NAME,
        tasks: [
          { name: 'quick', instances: 2, resources: { cpu: 0.1, memory: 64 }, command: 'echo "quick $FUXI_INSTANCE says hello"' },
          { name: 'slow', instances: 2, resources: { cpu: 0.1, memory: 64 }, command: 'sleep 60' },
        ],
      });
      jobId = (await client.submit(spec)).jobId;
      // quick done, slow running: the job is half done.
      await until(
        'quick to succeed while slow runs',
        async () => {
          const tasks = (await client.get(jobId)).tasks;
          const q = tasks.find((t) => t.name === 'quick');
          const s = tasks.find((t) => t.name === 'slow');
          return q?.succeeded === 2 && s?.running === 2;
        },
        30_000,
        200,
      );
    } finally {
      client.close();
    }
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    await stopCluster(c, failed);
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('the overview lists every node and the job with its progress, its name as text', async () => {
    const dom = await chromium(profile, `${base}?live=0`, ['--dump-dom']);
    const nodes = tableById(dom, 'nodes-table');
    for (const a of c!.agents) {
      const row = rowOf(nodes, 'data-node-id', a.nodeId);
      expect(row).to.include(a.address);
      expect(row).to.include('ready');
    }
    const jobs = tableById(dom, 'jobs-table');
    const row = rowOf(jobs, 'data-job-id', jobId);
    expect(row).to.include('<td class="job-name">&lt;img src=x onerror=alert(1)&gt;</td>');
    expect(row).to.match(/<td class="progress">.*50%<\/td>/);
    expect(row).to.include('running');
    expect(dom, 'no element made of the name').to.not.match(/<img[^>]*onerror/i);
    expect(dom).to.include('id="summary"');
    expect(dom).to.include('S0');
  });

  it('the job page lists instances with hosts and log links; a log link answers the output', async () => {
    const dom = await chromium(profile, `${base}?live=0#/job/${encodeURIComponent(jobId)}`, ['--dump-dom']);
    const tasks = tableById(dom, 'job-tasks');
    expect(rowOf(tasks, 'data-task', 'quick')).to.include('100%');
    const instances = tableById(dom, 'job-instances');
    const addresses = c!.agents.map((a) => a.address);
    for (const w of ['quick.0.1', 'quick.1.1', 'slow.0.1', 'slow.1.1']) {
      const r = rowOf(instances, 'data-worker-id', w);
      expect(
        addresses.some((a) => r.includes(a)),
        `${w} names its host`,
      ).to.equal(true);
      expect(r).to.include(`/api/jobs/${jobId}/logs/${w}`);
    }
    expect(rowOf(instances, 'data-worker-id', 'quick.0.1')).to.match(/succeeded<\/td><td class="num">0<\/td>/);
    const log = await get(`${base}api/jobs/${encodeURIComponent(jobId)}/logs/quick.1.1`);
    expect(log.status).to.equal(200);
    expect(log.body).to.equal('quick 1 says hello\n');
  });

  it('/events says changed', async () => {
    const first = await new Promise<string>((resolve, reject) => {
      const req = http.get(`${base}events`, (res) => {
        expect(res.headers['content-type']).to.equal('text/event-stream');
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
          if (text.includes('event: changed\n')) {
            req.destroy();
            resolve(text);
          }
        });
      });
      req.on('error', (e) => (e.message.includes('socket hang up') ? undefined : reject(e)));
    });
    expect(first).to.match(/event: changed\ndata: [0-9a-f]{8}\n\n/);
  });

  it('takes a screenshot (bench-results/dashboard.png)', async () => {
    const out = join(REPO, 'bench-results');
    mkdirSync(out, { recursive: true });
    const file = join(out, 'dashboard.png');
    rmSync(file, { force: true });
    await chromium(profile, `${base}?live=0`, [`--screenshot=${file}`, '--window-size=1280,900']);
    expect(statSync(file).size).to.be.greaterThan(10_000);
  });
});
