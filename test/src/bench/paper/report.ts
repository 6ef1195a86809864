/**
 * The paper evaluation's report: `paper-eval.json` (everything), `paper-eval.md` (the paper's
 * Tables 4-8 and the checks, in its layout where it fits) and `paper-eval-jct-cdf.svg` (Figure 10:
 * CDF of job completion time per case).
 */
import type { CaseResult } from './run-case.js';
import { CATEGORIES } from './workload.js';

export interface Check {
  name: string;
  pass: boolean;
  detail: string;
}

export interface PaperEvalReport {
  generatedAt: string;
  wallClockMs: number;
  config: Record<string, unknown>;
  cases: CaseResult[];
  checks: Check[];
  notes: string[];
}

/** The issue's acceptance checks, on whatever cases were run. */
export function checks(cases: readonly CaseResult[]): Check[] {
  const out: Check[] = [];
  const ft = cases.find((c) => c.mode === 'FT' && c.faults === 'sim-crash');
  if (ft) {
    out.push({
      name: 'FT under simultaneous crash faults: no failed job',
      pass: ft.jobs.total.failed === 0 && ft.jobs.total.unfinished === 0,
      detail: `${ft.jobs.total.failed} failed, ${ft.jobs.total.unfinished} unfinished of ${ft.jobs.total.submitted}`,
    });
    out.push({
      name: 'FT under simultaneous crash faults: rescheduled instances < 1 %',
      pass: ft.instances.total.reschedRatio < 0.01,
      detail: `${ft.instances.total.rescheduled} of ${ft.instances.total.submitted} (${pct(ft.instances.total.reschedRatio, 3)})`,
    });
  }
  for (const c of cases) {
    if (c.mode === 'FT' || c.faults === 'none') continue;
    const ftSame = cases.find((x) => x.mode === 'FT' && x.faults === c.faults);
    const worse = c.jobs.total.failed > (ftSame?.jobs.total.failed ?? 0);
    out.push({
      name: `${c.name} shows failures (modes are told apart)`,
      pass: worse,
      detail: `${c.jobs.total.failed} failed jobs vs ${ftSame ? `${ftSame.jobs.total.failed} under FT` : 'no FT case with these faults'}`,
    });
  }
  for (const c of cases)
    if (c.faultsInjected.filter((f) => !f.skipped).length === 0 && c.faults !== 'none')
      out.push({ name: `${c.name}: faults were injected`, pass: false, detail: 'the case ended before the first fault' });
  return out;
}

const pct = (v: number, digits = 2): string => (Number.isFinite(v) ? `${(100 * v).toFixed(digits)}%` : '-');
const num = (v: number, digits = 2): string => (Number.isFinite(v) ? v.toFixed(digits) : '-');

function table(head: string[], rows: string[][]): string {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

export function markdown(r: PaperEvalReport, svgName: string): string {
  const cases = r.cases;
  const cfg = r.config;
  const lines: string[] = [];
  lines.push("# Fuxi-TS: the paper's failover evaluation (section 5), scaled down");
  lines.push('');
  lines.push(
    `Generated ${r.generatedAt}; wall clock ${Math.round(r.wallClockMs / 1000)} s. Real masters (${String(cfg.masters)}, real etcd), ${String(cfg.nodes)} virtual nodes ` +
      `(real agents, simulated workers, every AM a real in-process AppMaster) of ${String(cfg.nodeCpu)} cores / ${String(cfg.nodeMemory)}. ` +
      `Workload: ${String(cfg.jobs)} jobs, ${String(cfg.active)} kept active, sizes ${JSON.stringify(cfg.sizes)} instances in ${JSON.stringify(cfg.mix)} % proportion, ` +
      `instances of ${String(cfg.instanceCpu)} core / ${String(cfg.instanceMemory)} running ~${String(cfg.instanceMs)} ms; a fault every ${String(cfg.faultIntervalMs)} ms.`,
  );
  lines.push('');
  lines.push('## Checks');
  lines.push('');
  lines.push(
    table(
      ['check', 'result', 'detail'],
      r.checks.map((c) => [c.name, c.pass ? 'PASS' : 'FAIL', c.detail]),
    ),
  );
  lines.push('');
  lines.push('## Table 4: experiment cases');
  lines.push('');
  lines.push(
    table(
      ['case', 'failover deployed', 'faults', 'duration (s)'],
      cases.map((c) => [c.name, c.modeLabel, c.faults, `${Math.round(c.durationMs / 1000)}${c.timedOut ? ' (cap hit)' : ''}`]),
    ),
  );
  lines.push('');
  lines.push('## Tables 5 and 8: job and instance execution');
  lines.push('');
  lines.push(
    'Rescheduled = worker executions beyond the first of each instance; ratio = rescheduled / submitted instances ' +
      '(Table 5), "of completed" = rescheduled / completed instances (Table 8). Overhead = master CPU time (all master processes) per instance execution.',
  );
  lines.push('');
  const head = ['', ...cases.map((c) => c.name)];
  const row = (label: string, f: (c: CaseResult) => string): string[] => [label, ...cases.map(f)];
  lines.push(
    table(head, [
      row('**Jobs** submitted', (c) => String(c.jobs.total.submitted)),
      row('completed', (c) => String(c.jobs.total.completed)),
      row('failed (%)', (c) => `${c.jobs.total.failed} (${pct(c.jobs.total.submitted ? c.jobs.total.failed / c.jobs.total.submitted : 0)})`),
      row('unfinished', (c) => String(c.jobs.total.unfinished)),
      row('**Instances** submitted', (c) => String(c.instances.total.submitted)),
      row(
        'completed (% of submitted)',
        (c) => `${c.instances.total.completed} (${pct(c.instances.total.submitted ? c.instances.total.completed / c.instances.total.submitted : 0)})`,
      ),
      row('rescheduled', (c) => String(c.instances.total.rescheduled)),
      row('resched ratio', (c) => pct(c.instances.total.reschedRatio, 3)),
      row('resched of completed', (c) => pct(c.instances.total.reschedOfCompleted, 3)),
      row('workers killed / failed exits', (c) => `${c.instances.total.killed} / ${c.instances.total.failedExits}`),
      row('overhead (us per instance)', (c) => num(c.overheadUsPerInstance, 1)),
      row('faults injected', (c) => String(c.faultsInjected.filter((f) => !f.skipped).length)),
      row('AM restarts / agents timing out / master takeovers', (c) => `${c.events.amRestarts} / ${c.events.agentsTimingOut} / ${c.events.masterTakeovers}`),
      row('masters that exited on their own (after SIGCONT / otherwise)', (c) => `${c.events.masterExitsAfterResume} / ${c.events.masterUnexpectedExits}`),
    ]),
  );
  lines.push('');
  lines.push('Per job category (submitted / completed / failed jobs; instances submitted / completed / rescheduled):');
  lines.push('');
  lines.push(
    table(
      ['case', ...CATEGORIES],
      cases.map((c) => [
        c.name,
        ...CATEGORIES.map(
          (k) =>
            `${c.jobs[k].submitted}/${c.jobs[k].completed}/${c.jobs[k].failed}; ${c.instances[k].submitted}/${c.instances[k].completed}/${c.instances[k].rescheduled} (${pct(c.instances[k].reschedRatio, 3)})`,
        ),
      ]),
    ),
  );
  lines.push('');
  const sim = cases.filter((c) => c.faults === 'sim-crash');
  if (sim.length > 0) {
    lines.push('## Figure 9: failover modes under simultaneous crash faults');
    lines.push('');
    lines.push(
      table(
        ['mode', '(a) completed jobs', '(b) completed instances / submitted', '(c) rescheduled / completed instances'],
        sim.map((c) => [
          c.mode,
          `${c.jobs.total.completed} of ${c.jobs.total.submitted}`,
          pct(c.instances.total.submitted ? c.instances.total.completed / c.instances.total.submitted : 0),
          pct(c.instances.total.reschedOfCompleted, 3),
        ]),
      ),
    );
    lines.push('');
  }
  lines.push('## Table 6: request handling and master resources');
  lines.push('');
  lines.push(
    'Round trip of each successful master call as the in-process AMs (UpdateRequests: resource requests) and agents (Heartbeat) timed it, ms; ' +
      "the leader's CPU (percent of one core, 1 s samples) and resident memory.",
  );
  lines.push('');
  lines.push(
    table(
      ['case', 'UpdateRequests avg', 'p50', 'p99', 'n', 'Heartbeat avg', 'p99', 'master CPU % avg (sd)', 'master RSS MB avg (sd)'],
      cases.map((c) => {
        const u = c.requestHandling.updateRequests;
        const h = c.requestHandling.heartbeat;
        return [
          c.name,
          num(u.avgMs, 3),
          num(u.p50Ms, 3),
          num(u.p99Ms, 3),
          String(u.count),
          num(h.avgMs, 3),
          num(h.p99Ms, 3),
          `${num(c.master.cpuPct.avg, 1)} (${num(c.master.cpuPct.stddev, 1)})`,
          `${num(c.master.rssKb.avg / 1024, 0)} (${num(c.master.rssKb.stddev / 1024, 1)})`,
        ];
      }),
    ),
  );
  lines.push('');
  lines.push('## Table 7: component recovery time (s)');
  lines.push('');
  lines.push(
    'Master: fault -> the new leader\'s "recovery complete" (with failover; without: "became leader"). Agent: crash -> the restarted agent\'s first heartbeat answered ' +
      '(timing: pause start -> first heartbeat answered after it). AM: fault -> the master registers its next attempt.',
  );
  lines.push('');
  const rec = (s: { n: number; avg: number; stddev: number }) => (s.n ? `${num(s.avg)} / ${num(s.stddev)} (n=${s.n})` : '-');
  lines.push(
    table(
      ['case', 'master avg / sd', 'agent avg / sd', 'AM avg / sd', 'AMs not recovered', 'agents not recovered'],
      cases
        .filter((c) => c.faults !== 'none')
        .map((c) => [
          c.name,
          rec(c.recovery.master),
          rec(c.recovery.agent),
          rec(c.recovery.am),
          String(c.recovery.amNotRecovered),
          String(c.recovery.agentNotRecovered),
        ]),
    ),
  );
  lines.push('');
  lines.push('## Figure 10: job completion time');
  lines.push('');
  lines.push(`![CDF of job completion time](${svgName})`);
  lines.push('');
  lines.push(
    'The curves give the fraction of all submitted jobs that succeeded within a given time (submission to end), so a mode that fails jobs levels off below 1.',
  );
  lines.push('');
  lines.push(
    table(
      ['case', 'jobs', 'avg (s)', 'p50', 'p99', 'max'],
      cases.map((c) => [c.name, String(c.jct.n), num(c.jct.avg), num(c.jct.p50), num(c.jct.p99), num(c.jct.max)]),
    ),
  );
  lines.push('');
  const reasons = cases.filter((c) => Object.keys(c.failureReasons).length > 0);
  if (reasons.length > 0) {
    lines.push('## Why jobs failed');
    lines.push('');
    for (const c of reasons) {
      lines.push(
        `- **${c.name}**: ${Object.entries(c.failureReasons)
          .sort((a, b) => b[1] - a[1])
          .slice(0, 5)
          .map(([m, n]) => `${n} x "${m}"`)
          .join('; ')}`,
      );
    }
    lines.push('');
  }
  lines.push('## Faults injected');
  lines.push('');
  for (const c of cases.filter((x) => x.faultsInjected.length > 0)) {
    lines.push(
      `- **${c.name}**: ${c.faultsInjected.map((f) => `${Math.round(f.atMs / 1000)} s ${f.component} ${f.kind} ${f.skipped ? `(skipped: ${f.skipped})` : `x${f.targets.length}`}`).join('; ')}`,
    );
  }
  lines.push('');
  if (r.notes.length) {
    lines.push('## Notes');
    lines.push('');
    for (const n of r.notes) lines.push(`- ${n}`);
    lines.push('');
  }
  return lines.join('\n');
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#17becf', '#bcbd22'];

/** Figure 10: one step line per case, job completion time (s) on x, cumulative fraction on y. */
export function cdfSvg(cases: readonly CaseResult[]): string {
  const W = 720;
  const H = 420;
  const L = 60;
  const R = 220;
  const T = 30;
  const B = 50;
  const pw = W - L - R;
  const ph = H - T - B;
  const xmax = niceMax(Math.max(1, ...cases.flatMap((c) => c.jct.cdf.map(([x]) => x))));
  const x = (v: number) => L + (pw * v) / xmax;
  const y = (v: number) => T + ph * (1 - v);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${L + pw / 2}" y="18" text-anchor="middle" font-size="14">CDF of job completion time per case (Figure 10)</text>`);
  for (let i = 0; i <= 5; i++) {
    const v = i / 5;
    out.push(
      `<line x1="${L}" x2="${L + pw}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/><text x="${L - 6}" y="${y(v) + 4}" text-anchor="end">${v.toFixed(1)}</text>`,
    );
    const xv = (xmax * i) / 5;
    out.push(
      `<line x1="${x(xv)}" x2="${x(xv)}" y1="${T}" y2="${T + ph}" stroke="#eee"/><text x="${x(xv)}" y="${T + ph + 16}" text-anchor="middle">${Math.round(xv)}</text>`,
    );
  }
  out.push(`<rect x="${L}" y="${T}" width="${pw}" height="${ph}" fill="none" stroke="#333"/>`);
  out.push(`<text x="${L + pw / 2}" y="${H - 12}" text-anchor="middle">job completion time (s), submission to successful end</text>`);
  out.push(`<text x="16" y="${T + ph / 2}" text-anchor="middle" transform="rotate(-90 16 ${T + ph / 2})">fraction of submitted jobs completed</text>`);
  cases.forEach((c, i) => {
    const color = COLORS[i % COLORS.length]!;
    if (c.jct.cdf.length > 0) {
      let d = `M ${x(0).toFixed(1)} ${y(0).toFixed(1)}`;
      let prevY = 0;
      for (const [xv, yv] of c.jct.cdf) {
        d += ` L ${x(xv).toFixed(1)} ${y(prevY).toFixed(1)} L ${x(xv).toFixed(1)} ${y(yv).toFixed(1)}`;
        prevY = yv;
      }
      out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="1.8"/>`);
    }
    const ly = T + 14 + i * 18;
    out.push(`<line x1="${L + pw + 12}" x2="${L + pw + 36}" y1="${ly - 4}" y2="${ly - 4}" stroke="${color}" stroke-width="2"/>`);
    out.push(`<text x="${L + pw + 42}" y="${ly}">${escapeXml(`${c.name} (${c.jct.n}/${c.jobs.total.submitted} jobs)`)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

function niceMax(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function escapeXml(s: string): string {
  return s.replace(/[<>&"]/g, (ch) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[ch]!);
}
