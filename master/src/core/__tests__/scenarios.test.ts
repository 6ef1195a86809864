/**
 * Scripted scenarios for the master core, in the manner of raft's `testdata` transcripts: each file
 * in `testdata/` is named after the rule it pins down and holds commands, each followed by `----`
 * and the rendered outcome (the effects, in order, then the fault FSM state when it changed and the
 * Table 3 sources used). A failing scenario shows the difference; `FUXI_REWRITE=1` rewrites the
 * expected outcomes from the current code (review the diff before committing it).
 *
 * Commands (times in ms; the clock moves only with `tick`):
 *   node <id> [cpu=<cores>] [mem=<GiB>] [rack=<r>]   an agent registers (epoch 7's master)
 *   submit <job> [instances=<n>]                      a job with task `map` (1 core / 1 GiB slots)
 *   register <job>                                     its AM registers
 *   ask <job> <n> [<location>]                         the AM asks for n `map` slots
 *   heartbeat <node>...                                agents heartbeat (with the seq they hold)
 *   tick <ms>                                          the clock moves on; the core ticks
 *   takeover                                           a new leader (next epoch) loads the hard state
 *   agent-reports <node>...                            agents register with it and report their grants
 *   app-reports <job>... [<su>@<node>=<n>...]          AMs report their units and the slots they hold
 *                                                      (or claim the given ones)
 *   status <node>...                                   node statuses and allocations
 */
import { expect } from 'chai';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { res } from '@fuxi/common';
import type { Effect, GrantEntry } from '../types.js';
import { Harness, mockSpec } from './core-factories.js';

/** The testdata folder in the sources (this file runs from master/dist/core/__tests__). */
const TESTDATA = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'src', 'core', '__tests__', 'testdata');
const CONFIG = { recoveryDeadlineMs: 3000, agentTimeoutMs: 10_000, agentTimingOutMs: 3000, amTimeoutMs: 20_000 };

interface Case {
  /** Comment lines before the command (kept when the file is rewritten). */
  lead: string;
  command: string;
  expected: string;
}

/** Splits a transcript into cases: comments, a command, `----`, the expected block (to a blank line). */
function parse(text: string): Case[] {
  const blocks = text.split(/^----\n/m);
  const cases: Case[] = [];
  let pending = blocks[0] ?? '';
  for (let i = 1; i < blocks.length; i++) {
    const lines = pending.split('\n').filter((l) => l.trim() !== '');
    const command = lines.at(-1) ?? '';
    const rest = blocks[i] ?? '';
    const end = rest.indexOf('\n\n');
    cases.push({ lead: lines.slice(0, -1).join('\n'), command, expected: end < 0 ? rest.trimEnd() : rest.slice(0, end) });
    pending = end < 0 ? '' : rest.slice(end + 2);
  }
  return cases;
}

function render(cases: Array<Case & { actual: string }>): string {
  return `${cases.map((c) => `${c.lead ? `${c.lead}\n` : ''}${c.command}\n----\n${c.actual}`).join('\n\n')}\n`;
}

const grantsText = (gs: readonly GrantEntry[]) =>
  gs
    .map((g) => `${g.appId}/${g.suId}=${g.slots}`)
    .sort()
    .join(' ');

function renderEffect(e: Effect): string {
  switch (e.kind) {
    case 'store':
      return `store ${e.ops.map((o) => `${o.type} ${o.key}`).join(', ')}`;
    case 'deletePrefix':
      return `store delete ${e.prefix}*`;
    case 'grants':
      return `grants -> ${e.nodeId} epoch=${e.epoch} seq=${e.seq} [${grantsText(e.grants)}]`;
    case 'launchAm':
      return `launch AM ${e.appId} attempt=${e.attempt} on ${e.nodeId}`;
    case 'assignments':
      return `assignments -> ${e.appId} seq=${e.seq}${e.full ? ' full' : ''} [${e.assignments
        .map((a) => `${a.suId}@${a.nodeId}=${a.slots}`)
        .sort()
        .join(' ')}]`;
    case 'agentsTimedOut':
      return `tell AM ${e.appId}: timing out [${e.nodeIds.join(' ')}] back [${(e.recoveredNodeIds ?? []).join(' ')}]`;
    case 'stopWorkers':
      return `stop workers of ${e.appId} on ${e.nodeId}: ${e.reason}`;
    case 'jobChanged':
      return `job changed ${e.jobId}`;
    case 'recovered':
      return `recovered: agents ${e.agentsReported} reported, ${e.agentsMissing} missing; apps ${e.appsReported} reported, ${e.appsMissing} missing`;
  }
}

function args(words: string[]): { pos: string[]; kv: Map<string, string> } {
  const kv = new Map<string, string>();
  const pos: string[] = [];
  for (const w of words) {
    const i = w.indexOf('=');
    if (i > 0) kv.set(w.slice(0, i), w.slice(i + 1));
    else pos.push(w);
  }
  return { pos, kv };
}

/** Runs one transcript against a fresh harness; returns the rendered outcome of every command. */
class Scenario {
  private h = new Harness({ config: CONFIG });
  private readonly racks = new Map<string, { rack: string; cpu: number; mem: number }>();
  private fsm = this.h.core.clusterStatus(0).fsmState;
  private uses = 0;

  run(command: string): string {
    const [verb = '', ...words] = command.trim().split(/\s+/);
    const { pos, kv } = args(words);
    let out: string[] = [];
    try {
      out = verb === 'status' ? this.status(pos) : this.step(verb, pos, kv).map(renderEffect);
    } catch (e) {
      out = [`error: ${e instanceof Error ? e.message : String(e)}`];
    }
    const fsm = this.h.core.clusterStatus(this.h.now).fsmState;
    if (fsm !== this.fsm) out.push(`fsm ${this.fsm} -> ${fsm}`);
    this.fsm = fsm;
    const uses = this.h.core.sourceUses();
    for (const u of uses.slice(this.uses)) out.push(`table3 row ${u.row}: ${u.source} (${u.timing}) for ${u.subject || 'the master'}`);
    this.uses = uses.length;
    return out.length > 0 ? out.join('\n') : 'ok';
  }

  private status(ids: string[]): string[] {
    return ids.map((id) => {
      const s = this.h.core.nodeStatus(id);
      const n = this.h.core.listNodes().find((x) => x.info.nodeId === id);
      return `${id}: ${s?.status ?? 'unknown'}${s?.reported === false ? ' (not reported)' : ''} allocated cpu=${n?.allocated.cpuMilli ?? 0}m mem=${n?.allocated.memoryMb ?? 0}Mi`;
    });
  }

  private step(verb: string, pos: string[], kv: Map<string, string>): Effect[] {
    const h = this.h;
    switch (verb) {
      case 'node': {
        const [id = 'n1'] = pos;
        const spec = { rack: kv.get('rack') ?? 'r1', cpu: Number(kv.get('cpu') ?? 8), mem: Number(kv.get('mem') ?? 16) };
        this.racks.set(id, spec);
        return h.addNode({ nodeId: id, rack: spec.rack, capacity: res(spec.cpu * 1000, spec.mem * 1024) });
      }
      case 'submit': {
        const [id = 'job-1'] = pos;
        const instances = Number(kv.get('instances') ?? 2);
        return h.submit(mockSpec({ id, tasks: [{ name: 'map', instances, resources: { cpu: 1, memory: 1024 }, command: ['true'] }] })).effects;
      }
      case 'register':
        return h.registerApp(pos[0] ?? 'job-1').effects;
      case 'ask':
        return h.ask(pos[0] ?? 'job-1', Number(pos[1] ?? 1), pos[2] ?? '').effects;
      case 'heartbeat':
        return pos.flatMap((id) => h.heartbeat(id).effects);
      case 'tick':
        h.advance(Number(pos[0] ?? 0));
        return h.tick();
      case 'takeover': {
        const next = new Harness({ config: CONFIG, epoch: String(BigInt(h.core.epoch) + 1n), now: h.now });
        const effects = next.takeOver(h);
        next.inheritSeqs(h);
        this.h = next;
        this.uses = 0;
        return effects;
      }
      case 'agent-reports':
        return pos.flatMap((id) => {
          const r = this.racks.get(id);
          return h.agentReports({ nodeId: id, ...(r ? { rack: r.rack, capacity: res(r.cpu * 1000, r.mem * 1024) } : {}) });
        });
      case 'app-reports': {
        // `su@node=n` arguments replace what the AM claims to hold (default: what it was told).
        const claims = kv.size > 0 ? Object.fromEntries([...kv].map(([k, v]) => [k, Number(v)])) : undefined;
        return pos.flatMap((id) => h.appReports(id, claims ? { claims } : {}));
      }
      default:
        throw new Error(`unknown command "${verb}"`);
    }
  }
}

describe('master core scenarios (testdata transcripts)', () => {
  const files = readdirSync(TESTDATA)
    .filter((f) => f.endsWith('.txt'))
    .sort();
  it('has transcripts', () => expect(files.length).to.be.greaterThan(0));
  for (const file of files) {
    it(file.replace(/\.txt$/, '').replace(/-/g, ' '), () => {
      const path = join(TESTDATA, file);
      const cases = parse(readFileSync(path, 'utf8'));
      const s = new Scenario();
      const done = cases.map((c) => ({ ...c, actual: s.run(c.command) }));
      if (process.env.FUXI_REWRITE === '1') {
        writeFileSync(path, render(done));
        return;
      }
      for (const c of done) expect(c.actual, `${file}: ${c.command}`).to.equal(c.expected);
    });
  }
});
