#!/usr/bin/env node
/**
 * Measurement (not a test): what peer probing costs one agent. One prober, the agent measured, runs
 * in a child process of its own (so its CPU is its own) with T probe targets; the peers run in this
 * process, and P of them probe it back. For each case the child reports, over `--seconds` of
 * steady state, the packets and UDP payload bytes it sent and received per second and its CPU
 * (`process.cpuUsage`). Everything is on loopback, at the agents' default period (200 ms) unless
 * `--period-ms` says otherwise. Prints a JSON summary on stdout; with `--out` also writes it there.
 *
 *   node test/dist/bench/probe-traffic.js [--cases 16x16,64x64,64x500] [--seconds 10] [--period-ms 200] [--out FILE]
 *
 * A case `TxP`: T targets (peers the agent pings), P probers (peers that ping the agent).
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Prober, probeDatagramBytes, type ProbeStats } from '@fuxi/agent';

const HOST = '127.0.0.1';
const id = (i: number) => `node-${String(i).padStart(4, '0')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface ChildReport {
  seconds: number;
  cpuMs: number;
  stats: ProbeStats;
  unreachable: string[];
}

/** The measured agent: binds, prints its port, probes the targets it is given, reports. */
async function child(periodMs: number, seconds: number, targets: Array<{ nodeId: string; address: string }>): Promise<void> {
  const p = new Prober({ nodeId: id(0), host: HOST, port: 0, periodMs, misses: 3 });
  await p.start();
  process.stdout.write(`${JSON.stringify({ port: p.port })}\n`);
  p.core.setTargets(1, targets, Date.now());
  await sleep(2000); // steady state
  const s0 = p.stats();
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await sleep(seconds * 1000);
  const c1 = process.cpuUsage(c0);
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const s1 = p.stats();
  const stats = Object.fromEntries(Object.keys(s1).map((k) => [k, (s1[k as keyof ProbeStats] - s0[k as keyof ProbeStats]) / secs])) as unknown as ProbeStats;
  const report: ChildReport = { seconds: secs, cpuMs: (c1.user + c1.system) / 1000, stats, unreachable: p.core.unreachable() };
  process.stdout.write(`${JSON.stringify(report)}\n`);
  p.stop();
}

async function runCase(targets: number, probers: number, periodMs: number, seconds: number) {
  const n = Math.max(targets, probers);
  const peers: Prober[] = [];
  for (let i = 1; i <= n; i++) {
    const p = new Prober({ nodeId: id(i), host: HOST, port: 0, periodMs, misses: 3 });
    await p.start();
    peers.push(p);
  }
  const mine = peers.slice(0, targets).map((p, i) => ({ nodeId: id(i + 1), address: p.address }));
  const proc = spawn(
    process.execPath,
    [fileURLToPath(import.meta.url), '--child', '--period-ms', String(periodMs), '--seconds', String(seconds), '--targets', JSON.stringify(mine)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const lines: string[] = [];
  let buf = '';
  const gotLine = new Promise<void>((resolve) => {
    proc.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        lines.push(buf.slice(0, i));
        buf = buf.slice(i + 1);
        resolve();
      }
    });
  });
  await gotLine;
  const { port } = JSON.parse(lines[0]!) as { port: number };
  // P of the peers probe the agent (each also keeps its own other targets out of the measurement).
  for (const p of peers.slice(0, probers)) p.core.setTargets(1, [{ nodeId: id(0), address: `${HOST}:${port}` }], Date.now());
  const code = await new Promise<number | null>((resolve) => proc.on('exit', resolve));
  for (const p of peers) p.stop();
  if (code !== 0 || lines.length < 2) throw new Error(`child exited ${code}`);
  const r = JSON.parse(lines[1]!) as ChildReport;
  const sent = r.stats.pingsSent + r.stats.pongsSent;
  const received = r.stats.pingsReceived + r.stats.pongsReceived;
  const payload = probeDatagramBytes(id(0));
  // On an Ethernet wire each datagram is one frame: payload + UDP 8 + IPv4 20 + Ethernet 18 (header
  // and FCS), padded to the 64-byte minimum frame.
  const frame = Math.max(64, payload + 8 + 20 + 18);
  return {
    case: `${targets}x${probers}`,
    targets,
    probers,
    periodMs,
    seconds: Math.round(r.seconds * 10) / 10,
    packetsSentPerSec: Math.round(sent),
    packetsReceivedPerSec: Math.round(received),
    expectedPacketsEachWayPerSec: Math.round(((targets + probers) * 1000) / periodMs),
    udpPayloadBytesSentPerSec: Math.round(r.stats.bytesSent),
    udpPayloadBytesReceivedPerSec: Math.round(r.stats.bytesReceived),
    datagramBytes: payload,
    ethernetFrameBytes: frame,
    wireBytesEachWayPerSec: Math.round(sent * frame),
    cpuPercentOfACore: Math.round((r.cpuMs / 10 / r.seconds) * 100) / 100,
    sendErrors: r.stats.sendErrors,
    unreachable: r.unreachable.length,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      child: { type: 'boolean', default: false },
      targets: { type: 'string', default: '[]' },
      cases: { type: 'string', default: '16x16,64x64,64x500' },
      seconds: { type: 'string', default: '10' },
      'period-ms': { type: 'string', default: '200' },
      out: { type: 'string' },
    },
    strict: true,
  });
  const periodMs = Number(values['period-ms']);
  const seconds = Number(values.seconds);
  if (values.child) return child(periodMs, seconds, JSON.parse(values.targets) as Array<{ nodeId: string; address: string }>);
  const results = [];
  for (const c of values.cases.split(',')) {
    const [t, p] = c.split('x').map(Number);
    if (!Number.isInteger(t) || !Number.isInteger(p)) throw new Error(`--cases: "${c}" is not TxP`);
    process.stderr.write(`case ${c}: ${t} targets, ${p} probers, ${seconds} s\n`);
    results.push(await runCase(t!, p!, periodMs, seconds));
  }
  const out = JSON.stringify({ at: new Date().toISOString(), results }, null, 2);
  process.stdout.write(`${out}\n`);
  if (values.out) writeFileSync(values.out, `${out}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`probe-traffic: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
