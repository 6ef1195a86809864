/**
 * The master's web dashboard (docs/architecture.md, "Dashboard"), served on the metrics HTTP
 * server (`metricsListen`): the page (`master/static/dashboard.html`, one file with inline CSS and
 * JS, no build step), its JSON (`/api/...`), a worker's log proxied from the agent that ran it, and
 * a server-sent event stream (`/events`) that says `changed` when what the page shows changed.
 * What it shows is computed by the pure functions of `core/dashboard-view.ts` from the same core
 * queries the gRPC handlers use. A standby redirects (307) to the leader's dashboard when the
 * leader names one (GetClusterStatus `dashboard_url`), else serves a page that says who leads.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import type * as http from 'node:http';
import { AM_SU, decodeEntry, errorMessage, NotFoundError, type Logger, type SnapshotEntry } from '@fuxi/common';
import type { WorkerStatus__Output } from '@fuxi/proto';
import type { Store } from '@fuxi/store';
import {
  dashboardRoute,
  fingerprint,
  instanceRows,
  jobRow,
  jobRows,
  nodeRows,
  parseJobFilter,
  parseWorkerId,
  summaryView,
  type WorkerReport,
} from '../core/dashboard-view.js';
import type { MasterCore } from '../core/master-core.js';
import { KEYS } from '../core/store-ops.js';
import type { Peers } from './peers.js';

/** Live-update streams served at once; more are answered 503. */
export const MAX_EVENT_CLIENTS = 32;
/** How often the stream's fingerprint is taken (ms). */
const EVENT_CHECK_MS = 1000;
/** A comment line on every stream this often, so proxies and the browser keep it open (ms). */
const HEARTBEAT_MS = 15_000;
/** How long the master waits for an agent or the job's AM when it builds a job page (ms). */
const PEER_DEADLINE_MS = 2000;
/** Agents asked for a job's workers at most; beyond, only the nodes the AM or the snapshot log name. */
const MAX_AGENTS_ASKED = 64;

/** What the dashboard needs of the master process. */
export interface DashboardContext {
  /** The core while this process leads, else undefined. */
  core(): MasterCore | undefined;
  /** The fenced store of the current term (the job's snapshot log). */
  leaderStore(): Store | undefined;
  /** This master's gRPC address. */
  address(): string;
  /** The leader's gRPC address as this process last saw it ('' when none is known). */
  leaderAddress(): string;
  /** The leader's dashboard URL, asked of the leader (undefined when unknown). */
  leaderDashboard(): Promise<string | undefined>;
  peers: Peers;
  log: Logger;
}

const PAGE_FILE = new URL('../../static/dashboard.html', import.meta.url);

const WORKER_STATES: Record<string, string> = {
  WORKER_STATE_PENDING: 'pending',
  WORKER_STATE_RUNNING: 'running',
  WORKER_STATE_SUCCEEDED: 'succeeded',
  WORKER_STATE_FAILED: 'failed',
  WORKER_STATE_KILLED: 'killed',
  WORKER_STATE_REJECTED: 'rejected',
};

/** A worker of an agent's or an AM's answer, as the view takes it. */
export function workerReportFromWire(w: WorkerStatus__Output, withExit: boolean): WorkerReport {
  const state = WORKER_STATES[w.state] ?? 'unknown';
  const ended = state === 'succeeded' || state === 'failed' || state === 'killed';
  return {
    workerId: w.workerId,
    task: w.task,
    instance: w.instance,
    attempt: w.attempt,
    nodeId: w.nodeId,
    state,
    ...(withExit && ended ? { exitCode: w.exitCode, signal: w.signal } : {}),
    ...(w.message ? { message: w.message } : {}),
    startedAtMs: Number(w.startedAtMs) || 0,
    finishedAtMs: Number(w.finishedAtMs) || 0,
  };
}

function send(res: http.ServerResponse, status: number, type: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', ...headers }).end(body);
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(body));
}

/** Escapes text for HTML (the standby page is the one page built on the server). */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export class Dashboard {
  private page: string | undefined;
  private readonly clients = new Set<http.ServerResponse>();
  private timer: NodeJS.Timeout | undefined;
  private lastBeat = 0;
  private lastPrint = '';

  constructor(private readonly ctx: DashboardContext) {}

  /** Serves `req` when it is a dashboard route; false otherwise (the caller answers 404). */
  handle(req: http.IncomingMessage, res: http.ServerResponse): boolean {
    const url = new URL(req.url ?? '/', 'http://dashboard');
    const route = dashboardRoute(req.method ?? 'GET', url.pathname);
    if (route.kind === 'none') return false;
    const core = this.ctx.core();
    if (!core) {
      void this.standby(req, res, route.kind === 'page');
      return true;
    }
    try {
      switch (route.kind) {
        case 'page':
          this.page ??= readFileSync(PAGE_FILE, 'utf8');
          send(res, 200, 'text/html; charset=utf-8', this.page, {
            'content-security-policy': "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:",
          });
          break;
        case 'summary':
          json(res, 200, this.summary(core));
          break;
        case 'nodes':
          json(res, 200, { nodes: nodeRows(core.listNodes(), Date.now()) });
          break;
        case 'jobs':
          json(res, 200, jobRows(core.listJobs([]), parseJobFilter(url.searchParams)));
          break;
        case 'job':
          void this.job(core, route.jobId).then(
            (body) => json(res, 200, body),
            (e: unknown) => this.fail(res, e),
          );
          break;
        case 'logs':
          void this.logs(core, route.jobId, route.workerId, url.searchParams.get('stream') === 'stderr' ? 'stderr' : 'stdout', res).catch((e: unknown) =>
            this.fail(res, e),
          );
          break;
        case 'events':
          this.events(req, res);
          break;
      }
    } catch (e) {
      this.fail(res, e);
    }
    return true;
  }

  /** Ends every live-update stream (the master stops). */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const c of this.clients) c.end();
    this.clients.clear();
  }

  private fail(res: http.ServerResponse, e: unknown): void {
    if (res.headersSent) {
      res.end();
      return;
    }
    if (e instanceof NotFoundError) json(res, 404, { error: e.message });
    else {
      this.ctx.log.warn({ err: errorMessage(e) }, 'dashboard request failed');
      json(res, 500, { error: errorMessage(e) });
    }
  }

  private summary(core: MasterCore) {
    const now = Date.now();
    return summaryView({
      address: this.ctx.address(),
      epoch: core.epoch,
      status: core.clusterStatus(now),
      faults: core.faults.history(),
      transitions: core.faults.transitions(),
      jobs: core.listJobs([]),
      nodeCount: core.listNodes().length,
      nowMs: now,
    });
  }

  /** A standby: to the leader's dashboard (307) when the leader names one, else a page (503) saying who leads. */
  private async standby(req: http.IncomingMessage, res: http.ServerResponse, page: boolean): Promise<void> {
    const leader = this.ctx.leaderAddress();
    let target: string | undefined;
    try {
      target = leader && leader !== this.ctx.address() ? await this.ctx.leaderDashboard() : undefined;
    } catch {
      target = undefined;
    }
    if (target) {
      const location = new URL(req.url ?? '/', target).toString();
      res.writeHead(307, { location, 'cache-control': 'no-store' }).end();
      return;
    }
    const what = leader ? `The leader is ${leader}; its dashboard address is not known here.` : 'No leader is known yet.';
    if (!page) {
      json(res, 503, { role: 'standby', address: this.ctx.address(), leader, error: `this master is a standby. ${what}` });
      return;
    }
    const body =
      `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="5"><title>Fuxi: standby master</title></head>` +
      `<body style="font-family:sans-serif"><h1>Standby master</h1><p id="standby">This master (${escapeHtml(this.ctx.address())}) is a standby. ${escapeHtml(what)}</p></body></html>`;
    send(res, 503, 'text/html; charset=utf-8', body);
  }

  /** A job with its tasks and instances: agents' records, the AM's view and the snapshot log. */
  private async job(core: MasterCore, jobId: string) {
    const record = core.getJob(jobId);
    const nodes = core.listNodes();
    const addresses = new Map(nodes.map((n) => [n.info.nodeId, n.info.address] as const));
    const store = this.ctx.leaderStore();
    const snapshot: SnapshotEntry[] = store
      ? (await store.list(KEYS.appLogPrefix(jobId))).map((kv) => decodeEntry(kv.value)).filter((e): e is SnapshotEntry => e !== undefined)
      : [];
    let am: WorkerReport[] = [];
    if (record.amAddress && (record.state === 'running' || record.state === 'submitted')) {
      am = await this.ctx.peers
        .am(record.amAddress)
        .GetAppState({}, { deadlineMs: PEER_DEADLINE_MS })
        .then((s) => s.workers.map((w) => workerReportFromWire(w, false)))
        .catch(() => []);
    }
    const named = new Set([...am.map((w) => w.nodeId), ...snapshot.map((e) => e.nodeId), record.amNodeId]);
    const ask = nodes.filter((n) => n.healthy && (nodes.length <= MAX_AGENTS_ASKED || named.has(n.info.nodeId)));
    const answers = await Promise.all(
      ask.map((n) =>
        this.ctx.peers
          .agent(n.info.address)
          .ListWorkers({ appId: jobId }, { deadlineMs: PEER_DEADLINE_MS })
          .then((r) => r.workers.map((w) => workerReportFromWire({ ...w, nodeId: w.nodeId || n.info.nodeId }, true)))
          .catch(() => [] as WorkerReport[]),
      ),
    );
    const agents = answers.flat();
    const instances = instanceRows(jobId, { agents: agents.filter((w) => w.task !== AM_SU), am: am.filter((w) => w.task !== AM_SU), snapshot }, addresses);
    const amAttempts = instanceRows(jobId, { agents: agents.filter((w) => w.task === AM_SU), am: [], snapshot: [] }, addresses);
    return { job: jobRow(record), instances, am: amAttempts[0]?.attempts ?? [] };
  }

  /** Streams a worker's log (`stream`: stdout or stderr) from the agent that ran it, as text. */
  private async logs(core: MasterCore, jobId: string, workerId: string, stream: 'stdout' | 'stderr', res: http.ServerResponse): Promise<void> {
    core.getJob(jobId);
    const w = parseWorkerId(workerId, AM_SU);
    if (!w) throw new NotFoundError('worker', workerId);
    const detail = await this.job(core, jobId);
    const attempt = [...detail.instances.flatMap((i) => i.attempts), ...detail.am].find((a) => a.workerId === workerId);
    if (!attempt?.address) throw new NotFoundError('worker (no known node)', workerId);
    const s = this.ctx.peers
      .agent(attempt.address)
      .stream.ReadLog({ appId: jobId, task: w.task, instance: w.instance, attempt: w.attempt, stream, follow: false }, { deadlineMs: 30_000 });
    res.on('close', () => s.cancel());
    for await (const chunk of s) {
      if (!res.headersSent)
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
      // A slow reader slows the agent's stream down instead of filling the master's memory.
      if (!res.write(chunk.data)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
      if (res.destroyed) return;
    }
    if (!res.headersSent) res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
    res.end();
  }

  /** `/events`: `changed` whenever the fingerprint of what the page shows changes; a comment every HEARTBEAT_MS. */
  private events(req: http.IncomingMessage, res: http.ServerResponse): void {
    if (this.clients.size >= MAX_EVENT_CLIENTS) {
      json(res, 503, { error: `at most ${MAX_EVENT_CLIENTS} live-update streams at once` });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    res.write('retry: 2000\n\n');
    this.clients.add(res);
    req.on('close', () => {
      this.clients.delete(res);
      if (this.clients.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    });
    this.timer ??= setInterval(() => {
      try {
        this.check();
      } catch (e) {
        this.ctx.log.warn({ err: errorMessage(e) }, 'dashboard: cannot compute what changed');
      }
    }, EVENT_CHECK_MS);
  }

  private check(): void {
    const core = this.ctx.core();
    const now = Date.now();
    let print = 'standby';
    if (core) {
      const s = this.summary(core);
      const nodes = nodeRows(core.listNodes(), now).map((n) => ({ ...n, heartbeatAgeMs: n.heartbeatAgeMs < 0 ? -1 : 0 }));
      const jobs = jobRows(core.listJobs([]), parseJobFilter(new URLSearchParams()));
      print = fingerprint([{ ...s, nowMs: 0 }, nodes, jobs]);
    }
    const beat = now - this.lastBeat >= HEARTBEAT_MS;
    if (print === this.lastPrint && !beat) return;
    const changed = print !== this.lastPrint;
    this.lastPrint = print;
    if (beat) this.lastBeat = now;
    for (const c of this.clients) {
      if (changed) c.write(`event: changed\ndata: ${print}\n\n`);
      else c.write(`: heartbeat\n\n`);
    }
  }
}
