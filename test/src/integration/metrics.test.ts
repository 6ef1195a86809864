/**
 * Prometheus metrics on every daemon of a real local cluster: `fuxi-local-cluster` (the binary,
 * as an operator runs it) turns them on and prints each daemon's `metrics  http://...` line; a job
 * whose instances fail once runs; then the master and every agent are scraped, each scrape is
 * parsed with a Prometheus text-format parser (parse-prometheus-text-format), names follow the
 * conventions, and the key families are there with values that fit the job.
 *
 * The parser (1.1.1) folds the series of a histogram with labels into one sample without count or
 * sum, so the count of such a series is read from its own `_count` line (`histogramCount`).
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import parsePrometheusTextFormat, { type ParsedFamily, type ParsedSample } from 'parse-prometheus-text-format';
import { FuxiClient } from '@fuxi/client';
import { BIN, isAlive, killAmHosts, waitExit, removeTree } from '@fuxi/deploy';
import { job, until } from '../harness.js';

const LOCAL_CLUSTER = join(BIN.master, '..', '..', '..', '..', 'deploy', 'dist', 'local-cluster-main.js');
const AGENTS = 2;

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

interface Scrape {
  families: Map<string, ParsedFamily>;
  text: string;
}

/** Scrapes `url`, checks the answer and the names, and returns the families by name. */
async function scrape(url: string): Promise<Scrape> {
  const r = await get(url);
  expect(r.status, url).to.equal(200);
  expect(r.type).to.match(/^text\/plain; version=0\.0\.4/);
  const families = parsePrometheusTextFormat(r.body);
  // Every family the text declares was parsed (the parser skips nothing it could not read).
  const declared = r.body.split('\n').filter((l) => l.startsWith('# TYPE ')).length;
  expect(families.length, url).to.equal(declared);
  for (const f of families) {
    expect(f.name, 'snake_case name').to.match(/^[a-z_][a-z0-9_]*$/);
    expect(f.help, `${f.name} has help`).to.not.equal('');
    if (!f.name.startsWith('fuxi_')) continue;
    if (f.type === 'COUNTER') expect(f.name, 'a counter ends in _total').to.match(/_total$/);
    else expect(f.name, 'only counters end in _total').to.not.match(/_total$/);
    if (f.type === 'HISTOGRAM') expect(f.name, 'histograms are in seconds').to.match(/_seconds$/);
    for (const m of f.metrics) for (const k of Object.keys(m.labels ?? {})) expect(k, `${f.name} label`).to.match(/^[a-z][a-z0-9_]*$/);
  }
  return { families: new Map(families.map((f) => [f.name, f])), text: r.body };
}

function family(s: Scrape, name: string, type: ParsedFamily['type']): ParsedFamily {
  const f = s.families.get(name);
  expect(f, `${name} is served`).to.not.equal(undefined);
  expect(f!.type, `${name} type`).to.equal(type);
  return f!;
}

const matches = (m: ParsedSample, labels: Record<string, string>) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v);

/** The sum of a counter's or gauge's samples with these labels (0 when none). */
function value(s: Scrape, name: string, type: ParsedFamily['type'], labels: Record<string, string> = {}): number {
  return family(s, name, type)
    .metrics.filter((m) => matches(m, labels))
    .reduce((n, m) => n + Number(m.value), 0);
}

/** A histogram's observation count: its `_count` series with these labels, summed. */
function count(s: Scrape, name: string, labels: Record<string, string> = {}): number {
  family(s, name, 'HISTOGRAM');
  let n = 0;
  for (const line of s.text.split('\n')) {
    const m = new RegExp(`^${name}_count(?:\\{(.*)\\})? (\\S+)$`).exec(line);
    if (!m) continue;
    const have = Object.fromEntries([...(m[1] ?? '').matchAll(/([a-z_]+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) n += Number(m[2]);
  }
  return n;
}

describe('metrics: every daemon of a local cluster serves Prometheus metrics', function () {
  this.timeout(120_000);
  let dir = '';
  let proc: ChildProcess | undefined;
  let out = '';
  let failed = false;
  /** Daemons as fuxi-local-cluster printed them: name, address, pid, metrics URL. */
  const daemons: Array<{ name: string; address: string; pid: number; metrics: string }> = [];
  /** The master's `dashboard  http://host:port/` line, after its metrics line. */
  let dashboard = '';

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fuxi-it-metrics-'));
    proc = spawn(process.execPath, [LOCAL_CLUSTER, '--agents', String(AGENTS), '--dir', dir, '--agent-cpu', '2', '--agent-memory', '2Gi'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stdout!.on('data', (d) => (out += String(d)));
    proc.stderr!.on('data', (d) => (out += String(d)));
    await until('fuxi-local-cluster to print its daemons', () => out.includes('Ctrl-C stops the cluster') || proc!.exitCode !== null, 60_000);
    expect(proc.exitCode, out).to.equal(null);
    // `<name> <host:port>  pid <pid>  log <file>`, each followed by `metrics  http://host:port/metrics`.
    const lines = out.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const m = /^(\S+)\s+(\S+:\d+)\s+pid (\d+)\s+log /.exec(lines[i]!);
      if (!m) continue;
      const metrics = /^metrics {2}(http:\/\/127\.0\.0\.1:\d+\/metrics)$/.exec(lines[i + 1] ?? '');
      expect(metrics, `a metrics line after ${m[1]}:\n${out}`).to.not.equal(null);
      daemons.push({ name: m[1]!, address: m[2]!, pid: Number(m[3]), metrics: metrics![1]! });
      if (m[1] === 'master') dashboard = /^dashboard {2}(http:\/\/127\.0\.0\.1:\d+\/)$/.exec(lines[i + 2] ?? '')?.[1] ?? '';
    }
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    // fuxi-local-cluster stops its daemons and kills their workers on SIGTERM; anything left is killed by its pid.
    if (proc && proc.exitCode === null) {
      proc.kill('SIGTERM');
      if (!(await waitExit(proc, 15_000))) proc.kill('SIGKILL');
    }
    for (const d of daemons) if (isAlive(d.pid)) process.kill(d.pid, 'SIGKILL');
    killAmHosts(daemons.filter((d) => d.name !== 'master').map((d) => join(dir, d.name)));
    if (failed) process.stderr.write(`  (logs kept in ${dir})\n${out}\n`);
    else removeTree(dir);
  });

  it('refuses a --log-level that would hide the daemons\' "ready" lines, naming the flag, and starts nothing', async () => {
    const bad = spawn(process.execPath, [LOCAL_CLUSTER, '--log-level', 'warn', '--dir', join(dir, 'never')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    bad.stderr!.on('data', (d) => (text += String(d)));
    expect(await waitExit(bad, 30_000)).to.equal(true);
    expect(bad.exitCode).to.not.equal(0);
    expect(text).to.include('--log-level');
    expect(text).to.include('must be info, debug or trace, got "warn"');
    expect(existsSync(join(dir, 'never'))).to.equal(false);
  });

  it('prints a metrics line for the master and for each agent', () => {
    expect(daemons.map((d) => d.name)).to.deep.equal(['master', ...Array.from({ length: AGENTS }, (_, i) => `node-${i + 1}`)]);
    expect(new Set(daemons.map((d) => d.metrics)).size).to.equal(daemons.length);
    // The master's dashboard is on its metrics port.
    expect(dashboard, out).to.equal(daemons[0]!.metrics.replace(/metrics$/, ''));
  });

  it('after a job ran: master, agent and AM families are there with sane values', async () => {
    const master = daemons[0]!;
    const pki = join(dir, 'pki');
    const client = new FuxiClient({ masters: [master.address], tls: { ca: join(pki, 'ca.crt'), cert: join(pki, 'admin.crt'), key: join(pki, 'admin.key') } });
    try {
      // Each instance fails its first attempt: two retries.
      const spec = job({
        name: 'metrics',
        tasks: [
          {
            name: 'flaky',
            instances: 2,
            resources: { cpu: 0.1, memory: 64 },
            command: 'if [ "$FUXI_ATTEMPT" -le 1 ]; then exit 1; fi; echo ok',
            maxAttempts: 2,
          },
        ],
      });
      const { jobId } = await client.submit(spec);
      await until('the job to succeed', async () => ((await client.get(jobId)).state === 'JOB_STATE_SUCCEEDED' ? true : undefined), 60_000, 200);
    } finally {
      client.close();
    }

    const m = await scrape(master.metrics);
    expect(value(m, 'fuxi_master_leader', 'GAUGE')).to.equal(1);
    expect(value(m, 'fuxi_master_epoch', 'GAUGE')).to.be.at.least(1);
    expect(value(m, 'fuxi_master_recovering', 'GAUGE')).to.equal(0);
    expect(value(m, 'fuxi_master_nodes', 'GAUGE', { state: 'healthy' })).to.equal(AGENTS);
    expect(value(m, 'fuxi_master_nodes', 'GAUGE', { state: 'lost' })).to.equal(0);
    expect(value(m, 'fuxi_master_jobs', 'GAUGE', { state: 'succeeded' })).to.equal(1);
    expect(value(m, 'fuxi_master_jobs', 'GAUGE', { state: 'running' })).to.equal(0);
    expect(value(m, 'fuxi_master_application_masters', 'GAUGE')).to.equal(0);
    expect(value(m, 'fuxi_master_pending_slots', 'GAUGE')).to.equal(0);
    // The AM's slot and at least one slot per instance (a slot may be reused for the retry).
    const grants = value(m, 'fuxi_master_grants_total', 'COUNTER');
    expect(grants).to.be.at.least(3);
    const waits = count(m, 'fuxi_master_request_to_grant_seconds');
    expect(waits).to.be.at.least(1).and.at.most(grants);
    expect(count(m, 'fuxi_master_scheduling_pass_seconds')).to.be.at.least(1);
    expect(count(m, 'fuxi_master_failover_phase_seconds', { phase: 'load' })).to.equal(1);
    expect(count(m, 'fuxi_master_failover_phase_seconds', { phase: 'total' })).to.equal(1);
    expect(count(m, 'fuxi_master_fault_recovery_seconds', { kind: 'FM_CRASH', phase: 'total' })).to.equal(1);
    expect(value(m, 'fuxi_master_fault_fsm_state', 'GAUGE', { state: 'S0' })).to.equal(1);
    expect(value(m, 'fuxi_master_faults_open', 'GAUGE')).to.equal(0);
    expect(count(m, 'fuxi_master_store_write_seconds')).to.be.at.least(2); // the job, its AM's place, its end
    expect(value(m, 'fuxi_master_store_write_failures_total', 'COUNTER')).to.equal(0);
    const rpc = { service: 'fuxi.v1.MasterService' };
    expect(count(m, 'fuxi_grpc_server_handling_seconds', { ...rpc, method: 'SubmitJob' })).to.equal(1);
    expect(count(m, 'fuxi_grpc_server_handling_seconds', { ...rpc, method: 'RegisterApp' })).to.be.at.least(1);
    expect(value(m, 'fuxi_grpc_server_handled_total', 'COUNTER', { ...rpc, method: 'FinishApp', code: 'OK' })).to.be.at.least(1);
    expect(value(m, 'fuxi_grpc_server_handled_total', 'COUNTER', { ...rpc, method: 'Heartbeat', code: 'OK' })).to.be.at.least(AGENTS);
    expect(value(m, 'process_resident_memory_bytes', 'GAUGE')).to.be.greaterThan(0);

    // Agents: summed over the cluster (which node ran what is the scheduler's choice).
    const agents = await Promise.all(daemons.slice(1).map((d) => scrape(d.metrics)));
    const sum = (name: string, type: ParsedFamily['type'], labels: Record<string, string> = {}) => agents.reduce((n, a) => n + value(a, name, type, labels), 0);
    expect(sum('fuxi_agent_workers', 'GAUGE', { kind: 'task', state: 'succeeded' })).to.equal(2);
    expect(sum('fuxi_agent_workers', 'GAUGE', { kind: 'task', state: 'failed' })).to.equal(2);
    expect(sum('fuxi_agent_workers', 'GAUGE', { kind: 'task', state: 'running' })).to.equal(0);
    expect(sum('fuxi_agent_worker_launches_total', 'COUNTER', { kind: 'task', result: 'started' })).to.equal(4);
    expect(sum('fuxi_agent_worker_launches_total', 'COUNTER', { kind: 'am', result: 'started' })).to.equal(1);
    expect(sum('fuxi_agent_worker_adoptions_total', 'COUNTER')).to.equal(0);
    expect(sum('fuxi_agent_checkpoint_writes_total', 'COUNTER', { result: 'ok' })).to.be.at.least(AGENTS);
    expect(agents.reduce((n, a) => n + count(a, 'fuxi_agent_checkpoint_write_seconds'), 0)).to.be.at.least(AGENTS);
    expect(
      agents.reduce((n, a) => n + count(a, 'fuxi_grpc_server_handling_seconds', { service: 'fuxi.v1.AgentService', method: 'StartWorkers' }), 0),
    ).to.be.at.least(2);
    // The AM ran in an AM host and has finished: none hosted now, its two retries counted.
    expect(sum('fuxi_am_hosted', 'GAUGE')).to.equal(0);
    expect(sum('fuxi_am_instances', 'GAUGE')).to.equal(0);
    expect(sum('fuxi_am_instance_retries_total', 'COUNTER')).to.equal(2);
  });
});
