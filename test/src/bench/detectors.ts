/**
 * Benchmark (not a test): replays recorded heartbeat traces (a master's `--record-heartbeats`
 * files, `<nodeId> <ms>` per line) through every failure detector and a grid of its parameters,
 * with crashes injected at random instants, and reports Chen et al.'s QoS for each: detection time,
 * mistakes per hour, query accuracy (master/src/core/detector-qos.ts). The chosen detector is the
 * one that detects fastest (p50) with no more mistakes per hour than the fixed 3 s timeout.
 *
 * Writes bench-results/detectors.json `{fixed, chosen, all}` and bench-results/detectors.svg
 * (detection time against mistake rate).
 *
 *   node test/dist/bench/detectors.js [--traces DIR] [--crashes N] [--seed S]
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from '@fuxi/deploy';
import { evaluateDetector, type DetectorQos } from '@fuxi/master/core/detector-qos';
import { defaultDetectorConfig, type DetectorConfig, type DetectorKind } from '@fuxi/master/core/detectors';
import { parseHeartbeatTrace } from '@fuxi/master/shell/heartbeat-recorder';

interface Row {
  kind: DetectorKind;
  params: Record<string, number>;
  detectionMsP50: number;
  detectionMsP99: number;
  mistakesPerHour: number;
  queryAccuracy: number;
  mistakeMsMean: number;
}

const TIMEOUT_MS = 3000;

/** The parameter grid: each kind's defaults with one knob swept. */
function grid(): DetectorConfig[] {
  const out: DetectorConfig[] = [];
  const d = (k: DetectorKind) => defaultDetectorConfig(k, TIMEOUT_MS) as unknown as Record<string, number>;
  for (const timeoutMs of [3000, 2000, 1500]) out.push({ kind: 'fixed', timeoutMs });
  for (const alphaMs of [50, 100, 200, 400, 800]) out.push({ ...d('chen'), alphaMs } as unknown as DetectorConfig);
  for (const phi of [2, 4, 8]) out.push({ ...d('bertier'), phi } as unknown as DetectorConfig);
  for (const threshold of [1, 2, 4, 8, 12, 16]) out.push({ ...d('phi'), threshold } as unknown as DetectorConfig);
  for (const minMarginMs of [50, 100, 200]) out.push({ ...d('sfd'), minMarginMs, initialMarginMs: 2 * minMarginMs } as unknown as DetectorConfig);
  return out;
}

function row(cfg: DetectorConfig, q: DetectorQos): Row {
  const { kind, ...params } = cfg as unknown as { kind: DetectorKind } & Record<string, number>;
  const r = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
  return {
    kind,
    params,
    detectionMsP50: r(q.detectionMsP50),
    detectionMsP99: r(q.detectionMsP99),
    mistakesPerHour: r(q.mistakesPerHour, 2),
    queryAccuracy: r(q.queryAccuracy, 6),
    mistakeMsMean: r(q.mistakeMsMean),
  };
}

function svg(rows: Row[], chosen: Row): string {
  const W = 640;
  const H = 400;
  const pad = 50;
  const maxX = Math.max(...rows.map((r) => r.mistakesPerHour), 1);
  const maxY = Math.max(...rows.map((r) => r.detectionMsP50), 1);
  const x = (v: number) => pad + ((W - 2 * pad) * v) / maxX;
  const y = (v: number) => H - pad - ((H - 2 * pad) * v) / maxY;
  const colors: Record<string, string> = { fixed: '#444', chen: '#1f77b4', bertier: '#2ca02c', phi: '#d62728', sfd: '#9467bd' };
  const dots = rows
    .map((r) => {
      const ring = r === chosen ? ` stroke="#000" stroke-width="2"` : '';
      return `<circle cx="${x(r.mistakesPerHour).toFixed(1)}" cy="${y(r.detectionMsP50).toFixed(1)}" r="5" fill="${colors[r.kind]}"${ring}><title>${r.kind} ${JSON.stringify(r.params)}</title></circle>`;
    })
    .join('\n');
  const legend = Object.entries(colors)
    .map(
      ([k, c], i) => `<circle cx="${W - 110}" cy="${pad + i * 18}" r="5" fill="${c}"/><text x="${W - 100}" y="${pad + 4 + i * 18}" font-size="12">${k}</text>`,
    )
    .join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif">
<rect width="${W}" height="${H}" fill="#fff"/>
<line x1="${pad}" y1="${H - pad}" x2="${W - pad}" y2="${H - pad}" stroke="#000"/><line x1="${pad}" y1="${pad}" x2="${pad}" y2="${H - pad}" stroke="#000"/>
<text x="${W / 2}" y="${H - 12}" font-size="13" text-anchor="middle">mistakes per hour (max ${maxX.toFixed(1)})</text>
<text x="14" y="${H / 2}" font-size="13" text-anchor="middle" transform="rotate(-90 14 ${H / 2})">detection time p50, ms (max ${maxY.toFixed(0)})</text>
${dots}
${legend}
</svg>
`;
}

function main(): void {
  const { values } = parseArgs({ options: { traces: { type: 'string' }, crashes: { type: 'string' }, seed: { type: 'string' } } });
  const dir = values.traces ?? join(REPO_ROOT, 'test', 'data', 'heartbeats');
  const traces = new Map<string, number[]>();
  const files = readdirSync(dir).filter((f) => f.endsWith('.txt'));
  if (files.length === 0) throw new Error(`no traces (*.txt) in ${dir}`);
  for (const f of files) for (const [node, arrivals] of parseHeartbeatTrace(readFileSync(join(dir, f), 'utf8'), f)) traces.set(`${f}:${node}`, arrivals);
  const opts = { crashesPerNode: Number(values.crashes ?? 200), seed: Number(values.seed ?? 1) };
  const arrivals = [...traces.values()].reduce((n, a) => n + a.length, 0);
  process.stderr.write(`${files.length} trace files, ${traces.size} hosts, ${arrivals} arrivals\n`);
  const all = grid().map((cfg) => row(cfg, evaluateDetector(cfg, traces, opts)));
  const fixed = all.find((r) => r.kind === 'fixed' && r.params['timeoutMs'] === TIMEOUT_MS)!;
  const eligible = all.filter((r) => r.kind !== 'fixed' && r.mistakesPerHour <= fixed.mistakesPerHour);
  const chosen = (eligible.length > 0 ? eligible : all).reduce((a, b) => (b.detectionMsP50 < a.detectionMsP50 ? b : a));
  for (const r of all)
    process.stderr.write(
      `${r.kind.padEnd(8)} ${JSON.stringify(r.params).slice(0, 60).padEnd(62)} p50 ${String(r.detectionMsP50).padStart(7)} ms  mistakes/h ${r.mistakesPerHour}\n`,
    );
  const out = join(REPO_ROOT, 'bench-results');
  mkdirSync(out, { recursive: true });
  const result = {
    traces: files,
    hosts: traces.size,
    arrivals,
    fixed,
    chosen,
    speedup: Math.round((fixed.detectionMsP50 / chosen.detectionMsP50) * 10) / 10,
    all,
  };
  writeFileSync(join(out, 'detectors.json'), JSON.stringify(result, null, 2) + '\n');
  writeFileSync(join(out, 'detectors.svg'), svg(all, chosen));
  process.stdout.write(
    `chosen: ${chosen.kind} ${JSON.stringify(chosen.params)}: p50 ${chosen.detectionMsP50} ms vs fixed ${fixed.detectionMsP50} ms (${result.speedup}x), mistakes/h ${chosen.mistakesPerHour} vs ${fixed.mistakesPerHour}\n`,
  );
}

main();
