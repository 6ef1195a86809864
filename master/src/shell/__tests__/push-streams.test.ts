import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import fc from 'fast-check';
import { acceptTable, nullLogger, type Logger } from '@fuxi/common';
import type { GrantUpdate } from '@fuxi/proto';
import type { Effect, GrantEntry } from '../../core/types.js';
import type { Peers } from '../peers.js';
import { grantMessage, PushStreams } from '../push-streams.js';

/** A WatchGrants call that keeps what is written; `hold` keeps the transport from taking it. */
class FakeCall extends EventEmitter {
  readonly written: GrantUpdate[] = [];
  private readonly callbacks: Array<() => void> = [];
  hold = false;
  writableLength = 0;

  write(msg: GrantUpdate, cb?: () => void): boolean {
    this.written.push(msg);
    if (cb && this.hold) this.callbacks.push(cb);
    else if (cb) setImmediate(cb);
    return true;
  }

  release(): void {
    this.hold = false;
    for (const cb of this.callbacks.splice(0)) cb();
  }

  end(): void {
    this.emit('finish');
  }
}

const tick = () => new Promise((r) => setImmediate(r));

function grant(appId: string, slots: number, suId = 't'): GrantEntry {
  return { appId, suId, slots, resource: { cpuMilli: 1000, memoryMb: 64 }, amAttempt: 1 };
}

function tableEffect(seq: number, grants: GrantEntry[], epoch = '1'): Extract<Effect, { kind: 'grants' }> {
  return { kind: 'grants', nodeId: 'n1', address: '10.0.0.1:7000', epoch, seq, full: true, grants };
}

function streams(): { pushes: PushStreams; call: FakeCall } {
  const peers = { agent: () => ({ UpdateGrants: () => Promise.reject(new Error('no unary call expected')) }) } as unknown as Peers;
  const pushes = new PushStreams(
    peers,
    () => true,
    nullLogger,
    () => undefined,
  );
  const call = new FakeCall();
  void pushes.holdGrants('n1', call as never);
  return { pushes, call };
}

/** What an agent holds after the messages it accepted, by the acceptance rule its core uses. */
class AgentTable {
  epoch = '0';
  seq = 0n;
  readonly grants = new Map<string, GrantEntry>();
  ignored = 0;

  apply(m: GrantUpdate): void {
    const base = m.baseSeq !== undefined && String(m.baseSeq) !== '0' ? { base: BigInt(String(m.baseSeq)) } : {};
    const v = acceptTable({ epoch: this.epoch, seq: this.seq }, { epoch: String(m.epoch), seq: BigInt(String(m.seq)), full: m.full ?? false, ...base });
    if (v.kind !== 'apply') {
      this.ignored++;
      return;
    }
    if (m.full) this.grants.clear();
    for (const g of (m.grants ?? []) as GrantEntry[]) {
      const k = `${g.appId}/${g.suId}`;
      if (g.slots === 0) this.grants.delete(k);
      else this.grants.set(k, g);
    }
    this.epoch = String(m.epoch);
    this.seq = BigInt(String(m.seq));
  }

  slots(): Record<string, number> {
    return Object.fromEntries([...this.grants].map(([k, g]) => [k, g.slots]).sort());
  }
}

const slotsOf = (grants: GrantEntry[]) => Object.fromEntries(grants.map((g) => [`${g.appId}/${g.suId}`, g.slots]).sort());

describe('grant pushes on a stream (master shell: push-streams.ts)', () => {
  describe('grantMessage', () => {
    const a = grant('a', 1);
    const b = grant('b', 2);
    const c = grant('c', 1);
    const same = ['g', 'h', 'i', 'j'].map((id) => grant(id, 1));
    const sent = { epoch: '1', seq: 4, byKey: new Map([a, b, c, ...same].map((g) => [`${g.appId}\u0000${g.suId}`, g])) };

    it('sends the whole table when nothing was written on the stream, or by another master', () => {
      expect(grantMessage({ epoch: '1', seq: 5, grants: [a] }, undefined)).to.include({ full: true, seq: '5' });
      expect(grantMessage({ epoch: '2', seq: 5, grants: [a, b, c, ...same] }, sent)).to.include({ full: true });
      expect(grantMessage({ epoch: '1', seq: 4, grants: [a, b, c, ...same] }, sent)).to.include({ full: true });
    });

    it('sends only new, changed and revoked entries (0 slots) against the last table, with its seq as the base', () => {
      const b2 = { ...b, slots: 3 };
      const d = grant('d', 1);
      const m = grantMessage({ epoch: '1', seq: 7, grants: [a, b2, d, grant('e', 1), grant('f', 1), ...same] }, sent);
      expect(m).to.include({ full: false, seq: '7', baseSeq: '4' });
      expect(slotsOf(m.grants as GrantEntry[])).to.deep.equal({ 'b/t': 3, 'c/t': 0, 'd/t': 1, 'e/t': 1, 'f/t': 1 });
    });

    it('sends the whole table when the delta would be no smaller', () => {
      expect(grantMessage({ epoch: '1', seq: 5, grants: [grant('x', 1)] }, sent)).to.include({ full: true });
    });
  });

  describe('PushStreams', () => {
    it('writes the first table whole, then deltas chained by their base', async () => {
      const { pushes, call } = streams();
      const t1 = [grant('a', 1), grant('b', 1), grant('c', 1)];
      pushes.push(tableEffect(1, t1));
      await tick();
      const t3 = [t1[0]!, t1[1]!, t1[2]!, grant('d', 1)];
      pushes.push(tableEffect(3, t3)); // seq 2 went in an earlier turn elsewhere (answered, say)
      await tick();
      expect(call.written.map((m) => [m.full, m.seq, m.baseSeq ?? '0', (m.grants ?? []).length])).to.deep.equal([
        [true, '1', '0', 3],
        [false, '3', '1', 1],
      ]);
      const agent = new AgentTable();
      for (const m of call.written) agent.apply(m);
      expect(agent.slots()).to.deep.equal(slotsOf(t3));
    });

    it('writes the next table whole after the agent was answered a table by a heartbeat', async () => {
      const { pushes, call } = streams();
      const t = [grant('a', 1), grant('b', 1), grant('c', 1)];
      pushes.push(tableEffect(1, t));
      await tick();
      pushes.tableAnswered('n1');
      pushes.push(tableEffect(2, [...t, grant('d', 1)]));
      await tick();
      expect(call.written.map((m) => m.full)).to.deep.equal([true, true]);
    });

    it("tells whether the agent's table is one the stream carried since its last full table", async () => {
      const { pushes } = streams();
      const t = [grant('a', 1), grant('b', 1), grant('c', 1)];
      pushes.push(tableEffect(1, t));
      await tick();
      pushes.push(tableEffect(3, [...t, grant('d', 1)]));
      await tick();
      expect([1, 2, 3, 4].map((seq) => pushes.onChain('n1', seq))).to.deep.equal([true, false, true, false]);
      expect(pushes.onChain('n2', 1)).to.equal(false);
      pushes.tableAnswered('n1');
      pushes.push(tableEffect(5, t));
      await tick();
      // A full table starts the chain anew.
      expect([1, 3, 5].map((seq) => pushes.onChain('n1', seq))).to.deep.equal([false, false, true]);
    });

    it('makes the waiting table a delta against the last one written when the transport takes it', async () => {
      const { pushes, call } = streams();
      call.hold = true;
      const base = [grant('a', 1), grant('b', 1), grant('c', 1), grant('d', 1)];
      for (let seq = 1; seq <= 8; seq++) {
        pushes.push(tableEffect(seq, [...base, grant(`x${seq}`, 1)]));
        await tick();
      }
      // Eight in flight; the next ones wait, each replacing the one before.
      pushes.push(tableEffect(9, [...base, grant('x9', 1)]));
      await tick();
      pushes.push(tableEffect(10, [...base, grant('x10', 2)]));
      await tick();
      expect(call.written).to.have.length(8);
      call.release();
      await tick();
      const last = call.written.at(-1)!;
      expect(last).to.include({ full: false, seq: '10', baseSeq: '8' });
      expect(slotsOf(last.grants as GrantEntry[])).to.deep.equal({ 'x10/t': 2, 'x8/t': 0 });
      const agent = new AgentTable();
      for (const m of call.written) agent.apply(m);
      expect(agent.ignored).to.equal(0);
      expect(agent.slots()).to.deep.equal(slotsOf([...base, grant('x10', 2)]));
    });

    it('keeps the agent on the master table through any changes, skipped numbers and heartbeat answers (property)', async () => {
      const step = fc.record({
        app: fc.integer({ min: 0, max: 11 }),
        slots: fc.integer({ min: 0, max: 3 }),
        skip: fc.boolean(),
        answer: fc.integer({ min: 0, max: 9 }),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), async (steps) => {
          const { pushes, call } = streams();
          const agent = new AgentTable();
          const table = new Map<string, GrantEntry>();
          let seq = 0;
          let applied = 0;
          for (const s of steps) {
            const k = `app${s.app}`;
            if (s.slots === 0) table.delete(k);
            else table.set(k, grant(k, s.slots));
            seq += s.skip ? 2 : 1;
            // A heartbeat answer: the whole table by another road, applied before what the stream
            // still carries; given when the agent is off the stream's chain (answer 1, as the
            // handler does), or whatever it holds (answer 0).
            if (s.answer === 0 || (s.answer === 1 && !pushes.onChain('n1', Number(agent.seq)))) {
              pushes.tableAnswered('n1');
              agent.apply({ epoch: '1', seq: String(seq), full: true, grants: [...table.values()] });
            }
            pushes.push(tableEffect(seq, [...table.values()]));
            await tick();
            for (const m of call.written.slice(applied)) agent.apply(m);
            applied = call.written.length;
            expect(agent.slots()).to.deep.equal(slotsOf([...table.values()]));
          }
        }),
        { numRuns: 100 },
      );
    });
  });
});

describe('assignment pushes to an AM host that fail (push-streams.ts)', () => {
  /** PushStreams whose pushes to AMs all fail, logging into `logged`, with `current` as the apps whose AM is where the push went. */
  function failing(current: Set<string>): { pushes: PushStreams; logged: Array<{ level: string; msg: string }> } {
    const logged: Array<{ level: string; msg: string }> = [];
    const log = {
      warn: (_: unknown, msg: string) => logged.push({ level: 'warn', msg }),
      debug: (_: unknown, msg: string) => logged.push({ level: 'debug', msg }),
    } as unknown as Logger;
    const peers = { assignAm: () => Promise.reject(new Error('nothing serves app-1%2Fam.1 here')) } as unknown as Peers;
    const pushes = new PushStreams(
      peers,
      () => true,
      log,
      () => undefined,
      (appId) => current.has(appId),
    );
    return { pushes, logged };
  }
  const assignments = (appId: string): Extract<Effect, { kind: 'assignments' }> => ({
    kind: 'assignments',
    appId,
    address: '10.0.0.1:7100#app-1%2Fam.1',
    epoch: '1',
    seq: 2,
    full: true,
    assignments: [],
  });

  it('warns when the AM is still the app’s; says it at debug level when that AM has ended since (its job over, or a new attempt)', async () => {
    const live = failing(new Set(['app-1']));
    live.pushes.push(assignments('app-1'));
    live.pushes.flush();
    const ended = failing(new Set());
    ended.pushes.push(assignments('app-1'));
    ended.pushes.flush();
    await new Promise((r) => setImmediate(r));
    expect(live.logged).to.deep.equal([{ level: 'warn', msg: 'assignment push failed; the next AM heartbeat heals it' }]);
    expect(ended.logged).to.deep.equal([{ level: 'debug', msg: 'assignment push to an AM that has ended since; dropped' }]);
  });
});
