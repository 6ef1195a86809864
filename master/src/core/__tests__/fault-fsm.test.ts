/**
 * The fault-handling layer (paper section 4.2.4): the system FSM of Fig. 5, every row of Table 3,
 * and the bulletin board / dispatcher.
 */
import { expect } from 'chai';
import { InvalidArgumentError, type Logger } from '@fuxi/common';
import {
  FAULT_KINDS,
  FaultBoard,
  fsmStateLabel,
  fsmStateOf,
  FSM_STATES,
  TABLE_3,
  table3Row,
  type FaultEvent,
  type FaultKind,
  type FsmState,
  type SoftStateSource,
  type SourceTiming,
} from '../fault-fsm.js';

const T0 = 1_000_000;

/** All orderings of a list. */
function permutations<T>(xs: readonly T[]): T[][] {
  if (xs.length <= 1) return [[...xs]];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]));
}

/** All subsets of a list. */
function subsets<T>(xs: readonly T[]): T[][] {
  return xs.reduce<T[][]>((acc, x) => [...acc, ...acc.map((s) => [...s, x])], [[]]);
}

const CLASS: Record<FaultKind, 'fm' | 'am' | 'agent'> = {
  FM_CRASH: 'fm',
  AM_CRASH: 'am',
  AM_TIMING: 'am',
  AGENT_CRASH: 'agent',
  AGENT_TIMING: 'agent',
  AGENT_PARTITIONED: 'agent',
};

/** Fig. 5, written independently of the implementation: which component classes are failing. */
function expectedState(kinds: readonly FaultKind[]): FsmState {
  const c = new Set(kinds.map((k) => CLASS[k]));
  const key = ['fm', 'am', 'agent'].filter((x) => c.has(x as 'fm')).join('+');
  const map: Record<string, FsmState> = { '': 'S0', fm: 'S1', am: 'S2', agent: 'S3', 'fm+am': 'S4', 'fm+agent': 'S5', 'fm+am+agent': 'S6', 'am+agent': 'S2S3' };
  return map[key]!;
}

/** A fault as a test posts it: one subject per class. */
const SUBJECT: Record<FaultKind, string> = {
  FM_CRASH: '',
  AM_CRASH: 'app-1',
  AM_TIMING: 'app-2',
  AGENT_CRASH: 'n1',
  AGENT_TIMING: 'n2',
  AGENT_PARTITIONED: 'n3',
};

type Cell = '√' | 'AR' | 'FC' | '-';
const TIMING: Record<Exclude<Cell, '-'>, SourceTiming> = { '√': 'now', AR: 'after-reconnect', FC: 'from-checkpoint' };
const COLUMNS: SoftStateSource[] = ['FMFullAsgnedRes', 'FMFullCap', 'FAFullCap', 'AMFullResReq', 'AMFullAsgnedRes'];

/**
 * The paper's Table 3 (columns FMFullAsgnedRes, FMFullCap, FAFullCap, AMFullResReq,
 * AMFullAsgnedRes), with the combination of open faults that selects each row. The three cells
 * empty in the extracted table are filled as the text says (rows 1 and 7 FAFullCap √, row 3
 * FMFullCap AR; see fault-fsm.ts).
 */
const PAPER: Array<{ row: number; state: FsmState; cells: [Cell, Cell, Cell, Cell, Cell]; kinds: FaultKind[] }> = [
  { row: 1, state: 'S1', cells: ['-', '-', '√', '√', '-'], kinds: ['FM_CRASH'] },
  { row: 2, state: 'S3', cells: ['-', '√', '-', '-', '-'], kinds: ['AGENT_CRASH'] },
  { row: 3, state: 'S3', cells: ['-', 'AR', '-', '-', '-'], kinds: ['AGENT_TIMING'] },
  { row: 4, state: 'S2', cells: ['√', '-', '-', '-', '-'], kinds: ['AM_CRASH'] },
  { row: 5, state: 'S2', cells: ['√', '-', '-', '-', '-'], kinds: ['AM_TIMING'] },
  { row: 6, state: 'S2S3', cells: ['√', '√', '-', '-', '-'], kinds: ['AM_CRASH', 'AGENT_CRASH'] },
  { row: 7, state: 'S4', cells: ['-', '-', '√', '√', '-'], kinds: ['FM_CRASH', 'AM_CRASH'] },
  { row: 8, state: 'S4', cells: ['-', '-', '√', 'AR', '-'], kinds: ['FM_CRASH', 'AM_TIMING'] },
  { row: 9, state: 'S5', cells: ['-', '-', '-', '√', '√'], kinds: ['FM_CRASH', 'AGENT_CRASH'] },
  { row: 10, state: 'S5', cells: ['-', '-', '-', '√', '√'], kinds: ['FM_CRASH', 'AGENT_TIMING'] },
  { row: 11, state: 'S6', cells: ['-', '-', 'AR', 'AR', '-'], kinds: ['FM_CRASH', 'AM_TIMING', 'AGENT_TIMING'] },
  { row: 12, state: 'S6', cells: ['-', '-', 'FC', 'AR', '-'], kinds: ['FM_CRASH', 'AM_TIMING', 'AGENT_CRASH'] },
  { row: 13, state: 'S6', cells: ['-', '-', '-', '√', '√'], kinds: ['FM_CRASH', 'AM_CRASH', 'AGENT_TIMING'] },
];

function sourcesOf(cells: readonly Cell[]): Array<{ source: SoftStateSource; timing: SourceTiming }> {
  return cells.flatMap((c, i) => (c === '-' ? [] : [{ source: COLUMNS[i]!, timing: TIMING[c] }]));
}

function post(board: FaultBoard, kind: FaultKind, now = T0): FaultEvent {
  return board.post(kind, SUBJECT[kind], now);
}

describe('fault FSM and Table 3', () => {
  describe('TABLE_3', () => {
    it("has exactly the paper's 13 rows, numbered 1..13, with the paper's cells", () => {
      expect(TABLE_3).to.have.length(13);
      expect(TABLE_3.map((r) => r.row)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
      for (const p of PAPER) {
        const r = TABLE_3[p.row - 1]!;
        expect(r.state, `row ${p.row}`).to.equal(p.state);
        expect(r.sources, `row ${p.row}`).to.deep.equal(sourcesOf(p.cells));
      }
      expect(TABLE_3.map((r) => r.name)).to.deep.equal([
        'FM Crash',
        'FAgent Crash',
        'FAgent Timing',
        'AM Crash',
        'AM Timing',
        'AMCrash/Timing+FAgentCrash/Timing',
        'FM Crash+AM Crash',
        'FM Crash+AM Timing',
        'FM Crash+FAgent Crash',
        'FM Crash+FAgent Timing',
        'FM Crash+AM Timing+FAgent Timing',
        'FM Crash+AM Timing+FAgent Crash',
        'FM Crash+AM Crash+FAgent Timing',
      ]);
    });

    it('is frozen', () => {
      expect(Object.isFrozen(TABLE_3)).to.equal(true);
      expect(Object.isFrozen(TABLE_3[0])).to.equal(true);
      expect(Object.isFrozen(TABLE_3[0]!.sources)).to.equal(true);
    });
  });

  describe('table3Row', () => {
    for (const p of PAPER) {
      it(`selects row ${p.row} (${p.state}) for ${p.kinds.join(' + ')}`, () => {
        for (const order of permutations(p.kinds)) {
          const r = table3Row(order.map((kind) => ({ kind })));
          expect(r?.row, order.join(',')).to.equal(p.row);
        }
      });
    }

    it('is undefined with no open fault (S0)', () => {
      expect(table3Row([])).to.equal(undefined);
    });

    it('row 6 covers every crash/timing mix of AM and agent without the master', () => {
      for (const am of ['AM_CRASH', 'AM_TIMING'] as const) {
        for (const agent of ['AGENT_CRASH', 'AGENT_TIMING'] as const) {
          expect(table3Row([{ kind: am }, { kind: agent }])?.row).to.equal(6);
        }
      }
    });

    it('an agent partitioned from the master selects the rows of an agent timing failure', () => {
      for (const p of PAPER.filter((x) => x.kinds.includes('AGENT_TIMING'))) {
        const kinds = p.kinds.map((k): FaultKind => (k === 'AGENT_TIMING' ? 'AGENT_PARTITIONED' : k));
        expect(table3Row(kinds.map((kind) => ({ kind })))?.row, kinds.join(',')).to.equal(p.row);
      }
      expect(table3Row([{ kind: 'AGENT_PARTITIONED' }, { kind: 'AM_CRASH' }])?.row).to.equal(6);
      expect(table3Row([{ kind: 'AGENT_PARTITIONED' }, { kind: 'AGENT_CRASH' }])?.row).to.equal(2);
    });

    it('FM crash + AM crash + agent crash uses row 13 (the stray "(S6)" line of that cell)', () => {
      expect(table3Row([{ kind: 'FM_CRASH' }, { kind: 'AM_CRASH' }, { kind: 'AGENT_CRASH' }])?.row).to.equal(13);
    });

    it('several faults of one kind select the same row as one', () => {
      expect(table3Row([{ kind: 'AGENT_TIMING' }, { kind: 'AGENT_TIMING' }, { kind: 'FM_CRASH' }])?.row).to.equal(10);
    });

    it('within a class, a crash decides over a timing failure', () => {
      expect(table3Row([{ kind: 'AGENT_TIMING' }, { kind: 'AGENT_CRASH' }])?.row).to.equal(2);
      expect(table3Row([{ kind: 'AM_TIMING' }, { kind: 'AM_CRASH' }])?.row).to.equal(4);
      expect(table3Row([{ kind: 'FM_CRASH' }, { kind: 'AM_TIMING' }, { kind: 'AM_CRASH' }])?.row).to.equal(7);
      expect(table3Row([{ kind: 'FM_CRASH' }, { kind: 'AGENT_TIMING' }, { kind: 'AGENT_CRASH' }])?.row).to.equal(9);
      expect(table3Row([{ kind: 'FM_CRASH' }, { kind: 'AM_TIMING' }, { kind: 'AGENT_TIMING' }, { kind: 'AGENT_CRASH' }])?.row).to.equal(12);
      expect(table3Row([{ kind: 'FM_CRASH' }, { kind: 'AM_TIMING' }, { kind: 'AM_CRASH' }, { kind: 'AGENT_TIMING' }])?.row).to.equal(13);
    });

    it("every combination's row has the combination's FSM state", () => {
      for (const s of subsets(FAULT_KINDS)) {
        const r = table3Row(s.map((kind) => ({ kind })));
        if (s.length === 0) expect(r).to.equal(undefined);
        else expect(r?.state, s.join(',')).to.equal(fsmStateOf(new Set(s)));
      }
    });
  });

  describe('fsmStateOf', () => {
    it('maps every set of fault kinds to its Fig. 5 state', () => {
      for (const s of subsets(FAULT_KINDS)) expect(fsmStateOf(new Set(s)), s.join(',') || 'none').to.equal(expectedState(s));
    });

    it('reaches every state', () => {
      const reached = new Set(subsets(FAULT_KINDS).map((s) => fsmStateOf(new Set(s))));
      expect([...reached].sort()).to.deep.equal([...FSM_STATES].sort());
    });

    it('labels states for humans', () => {
      expect(fsmStateLabel('S0')).to.equal('S0 normal');
      expect(fsmStateLabel('S5')).to.equal('S5 master + agent failure');
      expect(fsmStateLabel('S2S3')).to.equal('S2S3 AM + agent failure');
    });
  });
});

describe('FaultBoard', () => {
  describe('FSM transitions', () => {
    for (const kind of FAULT_KINDS) {
      it(`S0 -> ${expectedState([kind])} on ${kind}, and back to S0 when it is resolved`, () => {
        const b = new FaultBoard();
        expect(b.state).to.equal('S0');
        post(b, kind, T0);
        expect(b.state).to.equal(expectedState([kind]));
        b.recovering(kind, SUBJECT[kind], T0 + 5);
        expect(b.state).to.equal(expectedState([kind]));
        b.resolve(kind, SUBJECT[kind], T0 + 10);
        expect(b.state).to.equal('S0');
        expect(b.open()).to.deep.equal([]);
        expect(b.transitions()).to.deep.equal([
          { from: 'S0', to: expectedState([kind]), atMs: T0, event: `post ${kind}${SUBJECT[kind] ? ` ${SUBJECT[kind]}` : ''} (fault-1)` },
          { from: expectedState([kind]), to: 'S0', atMs: T0 + 10, event: `resolve ${kind}${SUBJECT[kind] ? ` ${SUBJECT[kind]}` : ''} (fault-1)` },
        ]);
      });
    }

    it('walks S0 -> S1 -> S4 -> S6 -> S2S3 -> S3 -> S0 (Fig. 5)', () => {
      const b = new FaultBoard();
      const seen: FsmState[] = [];
      const step = (f: () => void) => {
        f();
        seen.push(b.state);
      };
      step(() => b.post('FM_CRASH', '', T0));
      step(() => b.post('AM_TIMING', 'app-1', T0 + 1));
      step(() => b.post('AGENT_CRASH', 'n1', T0 + 2));
      step(() => b.resolve('FM_CRASH', '', T0 + 3));
      step(() => b.resolve('AM_TIMING', 'app-1', T0 + 4));
      step(() => b.resolve('AGENT_CRASH', 'n1', T0 + 5));
      expect(seen).to.deep.equal(['S1', 'S4', 'S6', 'S2S3', 'S3', 'S0']);
      expect(b.transitions().map((t) => `${t.from}->${t.to}@${t.atMs - T0}`)).to.deep.equal([
        'S0->S1@0',
        'S1->S4@1',
        'S4->S6@2',
        'S6->S2S3@3',
        'S2S3->S3@4',
        'S3->S0@5',
      ]);
    });

    it('walks S0 -> S3 -> S5 -> S6 -> S4 -> S2 -> S0', () => {
      const b = new FaultBoard();
      b.post('AGENT_TIMING', 'n2', T0);
      expect(b.state).to.equal('S3');
      b.post('FM_CRASH', '', T0);
      expect(b.state).to.equal('S5');
      b.post('AM_CRASH', 'app-1', T0);
      expect(b.state).to.equal('S6');
      b.resolve('AGENT_TIMING', 'n2', T0);
      expect(b.state).to.equal('S4');
      b.resolve('FM_CRASH', '', T0);
      expect(b.state).to.equal('S2');
      b.resolve('AM_CRASH', 'app-1', T0);
      expect(b.state).to.equal('S0');
    });

    // Every set of two or more kinds (so every pair and the triple of component classes, and
    // crash + timing in one class), posted in every order and resolved in every order (all six
    // kinds: every rotation of the list and of its reverse, 6!^2 orders take too long): after each
    // step the state is the Fig. 5 state of what is still open, and the transition log holds
    // exactly the steps that changed it.
    const orders = <T>(xs: readonly T[]): T[][] =>
      xs.length <= 5 ? permutations(xs) : [xs, [...xs].reverse()].flatMap((l) => l.map((_, i) => [...l.slice(i), ...l.slice(0, i)]));
    const combos = subsets(FAULT_KINDS).filter((s) => s.length >= 2);
    for (const combo of combos) {
      it(`${combo.join(' + ')}: every posting order x every resolving order`, () => {
        for (const postOrder of orders(combo)) {
          for (const resolveOrder of orders(combo)) {
            const b = new FaultBoard();
            const open: FaultKind[] = [];
            const expectedLog: string[] = [];
            let prev: FsmState = 'S0';
            const check = (what: string) => {
              const want = expectedState(open);
              expect(b.state, `${postOrder.join(',')} / ${resolveOrder.join(',')}: ${what}`).to.equal(want);
              if (want !== prev) expectedLog.push(`${prev}->${want}`);
              prev = want;
            };
            for (const k of postOrder) {
              post(b, k);
              open.push(k);
              check(`post ${k}`);
            }
            expect(b.row()?.row).to.equal(table3Row(combo.map((kind) => ({ kind })))?.row);
            for (const k of resolveOrder) {
              b.resolve(k, SUBJECT[k], T0 + 1);
              open.splice(open.indexOf(k), 1);
              check(`resolve ${k}`);
            }
            expect(b.state).to.equal('S0');
            expect(b.transitions().map((t) => `${t.from}->${t.to}`)).to.deep.equal(expectedLog);
          }
        }
      });
    }

    it('stays in the state while other faults of the same class remain open', () => {
      const b = new FaultBoard();
      b.post('AGENT_CRASH', 'n1', T0);
      b.post('AGENT_TIMING', 'n2', T0);
      b.post('AGENT_TIMING', 'n3', T0);
      expect(b.state).to.equal('S3');
      expect(b.row()?.row).to.equal(2);
      b.resolve('AGENT_CRASH', 'n1', T0 + 1);
      expect(b.state).to.equal('S3');
      expect(b.row()?.row).to.equal(3); // only timing failures left
      b.resolve('AGENT_TIMING', 'n2', T0 + 2);
      expect(b.state).to.equal('S3');
      b.resolve('AGENT_TIMING', 'n3', T0 + 3);
      expect(b.state).to.equal('S0');
      expect(b.transitions().map((t) => `${t.from}->${t.to}`)).to.deep.equal(['S0->S3', 'S3->S0']);
    });
  });

  describe('Table 3 rows from open events', () => {
    for (const p of PAPER) {
      it(`row ${p.row}: ${p.kinds.join(' + ')} -> ${p.state}, sources ${p.cells.join(' ')}`, () => {
        const b = new FaultBoard();
        for (const k of p.kinds) post(b, k);
        expect(b.state).to.equal(p.state);
        expect(b.row()?.row).to.equal(p.row);
        expect(b.sources()).to.deep.equal(sourcesOf(p.cells));
      });
    }

    it('tracks the row as crash and timing faults come and go', () => {
      const b = new FaultBoard();
      b.post('FM_CRASH', '', T0);
      expect(b.row()?.row).to.equal(1);
      b.post('AM_TIMING', 'app-1', T0);
      expect(b.row()?.row).to.equal(8);
      b.post('AGENT_TIMING', 'n1', T0);
      expect(b.row()?.row).to.equal(11);
      b.post('AGENT_CRASH', 'n2', T0);
      expect(b.row()?.row).to.equal(12);
      b.resolve('AGENT_CRASH', 'n2', T0);
      b.resolve('AM_TIMING', 'app-1', T0);
      b.post('AM_CRASH', 'app-1', T0);
      expect(b.row()?.row).to.equal(13);
      b.resolve('FM_CRASH', '', T0);
      expect(b.row()?.row).to.equal(6);
      expect(b.state).to.equal('S2S3');
    });

    it('has no sources in S0', () => {
      const b = new FaultBoard();
      expect(b.sources()).to.deep.equal([]);
      expect(b.row()).to.equal(undefined);
    });

    it('returns sources as copies', () => {
      const b = new FaultBoard();
      b.post('FM_CRASH', '', T0);
      const s = b.sources();
      s.push({ source: 'FMFullCap', timing: 'now' });
      s[0]!.timing = 'after-reconnect';
      expect(b.sources()).to.deep.equal(sourcesOf(['-', '-', '√', '√', '-']));
    });
  });

  describe('the bulletin board', () => {
    it('gives deterministic ids with the prefix, and times only from arguments', () => {
      const b = new FaultBoard({ idPrefix: 'ep7-' });
      const a = b.post('AGENT_CRASH', 'n1', 111, 'process exited');
      const c = b.post('AM_TIMING', 'app-9', 222);
      expect(a).to.deep.equal({ id: 'ep7-1', kind: 'AGENT_CRASH', subject: 'n1', sinceMs: 111, state: 'open', detail: 'process exited' });
      expect(c).to.deep.equal({ id: 'ep7-2', kind: 'AM_TIMING', subject: 'app-9', sinceMs: 222, state: 'open', detail: '' });
      expect(new FaultBoard().post('FM_CRASH', '', 5).id).to.equal('fault-1');
    });

    it('makes posting an open (kind, subject) idempotent', () => {
      const b = new FaultBoard();
      const calls: string[] = [];
      b.on('*', (e) => calls.push(e.id));
      const first = b.post('AGENT_TIMING', 'n1', T0, 'late');
      const again = b.post('AGENT_TIMING', 'n1', T0 + 500, 'later');
      expect(again).to.deep.equal(first);
      expect(b.open()).to.have.length(1);
      expect(calls).to.deep.equal(['fault-1']);
      expect(b.transitions()).to.have.length(1);
      // also while it is recovering
      b.recovering('AGENT_TIMING', 'n1', T0 + 600);
      const third = b.post('AGENT_TIMING', 'n1', T0 + 700);
      expect(third.id).to.equal('fault-1');
      expect(third.state).to.equal('recovering');
      // the same kind on another subject, or another kind on the same subject, is a new fault
      expect(b.post('AGENT_TIMING', 'n2', T0).id).to.equal('fault-2');
      expect(b.post('AGENT_CRASH', 'n1', T0).id).to.equal('fault-3');
      // after resolution, a new post is a new fault
      b.resolve('AGENT_TIMING', 'n1', T0 + 800);
      expect(b.post('AGENT_TIMING', 'n1', T0 + 900).id).to.equal('fault-4');
      expect(calls).to.deep.equal(['fault-1', 'fault-2', 'fault-3', 'fault-4']);
    });

    it('lists open and recovering events oldest first, as copies', () => {
      const b = new FaultBoard();
      b.post('AM_CRASH', 'app-1', 10);
      b.post('FM_CRASH', '', 20);
      b.post('AGENT_TIMING', 'n1', 30);
      b.recovering('AM_CRASH', 'app-1', 40);
      const open = b.open();
      expect(open.map((e) => [e.id, e.state])).to.deep.equal([
        ['fault-1', 'recovering'],
        ['fault-2', 'open'],
        ['fault-3', 'open'],
      ]);
      open[0]!.state = 'resolved';
      expect(b.open()[0]!.state).to.equal('recovering');
    });

    it('ignores recovering() and resolve() of faults that are not open', () => {
      const b = new FaultBoard();
      b.recovering('AM_CRASH', 'x', T0);
      b.resolve('AM_CRASH', 'x', T0);
      b.post('AM_CRASH', 'x', T0);
      b.resolve('AM_CRASH', 'x', T0 + 1);
      b.resolve('AM_CRASH', 'x', T0 + 2);
      expect(b.state).to.equal('S0');
      expect(b.history()).to.have.length(1);
      expect(b.transitions()).to.have.length(2);
    });

    it('keeps resolved events in a bounded history, with resolution time and detail', () => {
      const b = new FaultBoard({ historyLimit: 3 });
      for (let i = 1; i <= 5; i++) {
        b.post('AGENT_TIMING', `n${i}`, i * 10, 'late heartbeats');
        b.resolve('AGENT_TIMING', `n${i}`, i * 10 + 5, i % 2 ? 'heartbeats back' : '');
      }
      b.post('FM_CRASH', '', 100);
      const h = b.history();
      expect(h.map((e) => e.id)).to.deep.equal(['fault-3', 'fault-4', 'fault-5', 'fault-6']);
      expect(h[0]).to.deep.equal({
        id: 'fault-3',
        kind: 'AGENT_TIMING',
        subject: 'n3',
        sinceMs: 30,
        state: 'resolved',
        detail: 'late heartbeats; heartbeats back',
        resolvedAtMs: 35,
      });
      expect(h[1]!.detail).to.equal('late heartbeats');
      expect(h[3]!.state).to.equal('open');
      expect(b.history(2).map((e) => e.id)).to.deep.equal(['fault-5', 'fault-6']);
      expect(b.history(0)).to.deep.equal([]);
    });

    it('bounds history at 200 resolved events by default, and the transition log', () => {
      const b = new FaultBoard({ transitionLimit: 10 });
      for (let i = 0; i < 250; i++) {
        b.post('AM_CRASH', `app-${i}`, i);
        b.resolve('AM_CRASH', `app-${i}`, i);
      }
      const h = b.history();
      expect(h).to.have.length(200);
      expect(h[0]!.id).to.equal('fault-51');
      expect(h[199]!.id).to.equal('fault-250');
      const t = b.transitions();
      expect(t).to.have.length(10);
      expect(t[9]).to.deep.equal({ from: 'S2', to: 'S0', atMs: 249, event: 'resolve AM_CRASH app-249 (fault-250)' });
      expect(new FaultBoard().transitions()).to.deep.equal([]);
    });

    it('rejects unknown kinds and non-finite times', () => {
      const b = new FaultBoard();
      expect(() => b.post('FM_TIMING' as FaultKind, '', T0)).to.throw(InvalidArgumentError, /^kind: unknown fault kind "FM_TIMING"/);
      expect(() => b.post('FM_CRASH', '', Number.NaN)).to.throw(InvalidArgumentError, /^now: /);
      expect(() => b.on('nope' as FaultKind, () => {})).to.throw(InvalidArgumentError);
      expect(b.state).to.equal('S0');
    });

    it('logs posts, resolutions and transitions through the injected logger', () => {
      const lines: string[] = [];
      const log: Logger = {
        debug: () => {},
        info: (_o, m) => lines.push(`info ${m}`),
        warn: (_o, m) => lines.push(`warn ${m}`),
        error: (_o, m) => lines.push(`error ${m}`),
        child: () => log,
      };
      const b = new FaultBoard({ log });
      b.post('FM_CRASH', '', T0);
      b.resolve('FM_CRASH', '', T0 + 1);
      expect(lines).to.deep.equal(['info fault posted', 'info fault FSM S0 -> S1', 'info fault resolved', 'info fault FSM S1 -> S0']);
    });
  });

  describe('the dispatcher', () => {
    it('calls the handlers of the kind and "*" handlers in registration order', () => {
      const b = new FaultBoard();
      const calls: string[] = [];
      b.on('AGENT_CRASH', (e) => calls.push(`agent-crash#1 ${e.id}`));
      b.on('*', (e) => calls.push(`any#1 ${e.kind}`));
      b.on('AM_TIMING', () => calls.push('am-timing'));
      b.on('AGENT_CRASH', () => calls.push('agent-crash#2'));
      b.on('*', () => calls.push('any#2'));
      b.post('AGENT_CRASH', 'n1', T0);
      expect(calls).to.deep.equal(['agent-crash#1 fault-1', 'any#1 AGENT_CRASH', 'agent-crash#2', 'any#2']);
      calls.length = 0;
      b.post('FM_CRASH', '', T0);
      expect(calls).to.deep.equal(['any#1 FM_CRASH', 'any#2']);
    });

    it('does not dispatch recovering() or resolve()', () => {
      const b = new FaultBoard();
      let n = 0;
      b.on('*', () => n++);
      b.post('AM_CRASH', 'a', T0);
      b.recovering('AM_CRASH', 'a', T0);
      b.resolve('AM_CRASH', 'a', T0);
      expect(n).to.equal(1);
    });

    it('passes the state and Table 3 row the post produced', () => {
      const b = new FaultBoard();
      const seen: Array<[string, FsmState, number | undefined]> = [];
      b.on('*', (e, ctx) => seen.push([e.kind, ctx.state, ctx.row?.row]));
      b.post('FM_CRASH', '', T0);
      b.post('AM_TIMING', 'app-1', T0);
      b.post('AGENT_CRASH', 'n1', T0);
      expect(seen).to.deep.equal([
        ['FM_CRASH', 'S1', 1],
        ['AM_TIMING', 'S4', 8],
        ['AGENT_CRASH', 'S6', 12],
      ]);
    });

    it('unsubscribes (idempotently)', () => {
      const b = new FaultBoard();
      const calls: string[] = [];
      const offA = b.on('AM_CRASH', () => calls.push('a'));
      const offAny = b.on('*', () => calls.push('any'));
      b.on('AM_CRASH', () => calls.push('b'));
      b.post('AM_CRASH', 'x', T0);
      offA();
      offA();
      b.post('AM_CRASH', 'y', T0);
      offAny();
      b.post('AM_CRASH', 'z', T0);
      expect(calls).to.deep.equal(['a', 'any', 'b', 'any', 'b', 'b']);
    });

    it('hot-plugs: a handler added during dispatch runs from the next event; one removed during dispatch does not run', () => {
      const b = new FaultBoard();
      const calls: string[] = [];
      let offLate = (): void => {};
      b.on('*', (e) => {
        calls.push(`first ${e.id}`);
        if (e.id === 'fault-1') {
          b.on('*', (x) => calls.push(`added ${x.id}`));
          offLate();
        }
      });
      offLate = b.on('*', (e) => calls.push(`late ${e.id}`));
      b.post('AGENT_TIMING', 'n1', T0);
      b.post('AGENT_TIMING', 'n2', T0);
      expect(calls).to.deep.equal(['first fault-1', 'first fault-2', 'added fault-2']);
    });

    it('queues events posted by handlers until the current event has been dispatched to every handler', () => {
      const b = new FaultBoard();
      const calls: string[] = [];
      b.on('FM_CRASH', (e, ctx) => {
        calls.push(`fm-1 ${ctx.state}`);
        // e.g. the recovery finds a timing-out agent
        b.post('AGENT_TIMING', 'n1', e.sinceMs + 1);
        calls.push(`fm-1 after post: board ${b.state}`);
      });
      b.on('FM_CRASH', (_e, ctx) => calls.push(`fm-2 ${ctx.state}`));
      b.on('AGENT_TIMING', (_e, ctx) => calls.push(`agent ${ctx.state} row ${ctx.row?.row}`));
      b.post('FM_CRASH', '', T0);
      expect(calls).to.deep.equal(['fm-1 S1', 'fm-1 after post: board S5', 'fm-2 S1', 'agent S5 row 10']);
    });

    it('logs a handler that throws and still calls the others', () => {
      const errors: string[] = [];
      const log: Logger = { debug() {}, info() {}, warn() {}, error: (o, m) => errors.push(`${m}: ${(o as { err: Error }).err.message}`), child: () => log };
      const b = new FaultBoard({ log });
      const calls: string[] = [];
      b.on('*', () => {
        throw new Error('boom');
      });
      b.on('*', () => calls.push('second'));
      const e = b.post('AM_TIMING', 'app-1', T0);
      expect(e.id).to.equal('fault-1');
      expect(calls).to.deep.equal(['second']);
      expect(errors).to.deep.equal(['fault handler threw: boom']);
      expect(b.state).to.equal('S2');
      // and the board still dispatches afterwards
      b.post('AM_TIMING', 'app-2', T0);
      expect(calls).to.deep.equal(['second', 'second']);
    });

    it('gives handlers copies of the event', () => {
      const b = new FaultBoard();
      b.on('*', (e) => {
        e.state = 'resolved';
        e.subject = 'mutated';
      });
      b.post('AGENT_CRASH', 'n1', T0);
      expect(b.open()[0]).to.include({ subject: 'n1', state: 'open' });
    });
  });

  describe('takeResolved', () => {
    it('gives each resolved fault once, with its detection, recovery and total times', () => {
      const b = new FaultBoard();
      b.post('AGENT_TIMING', 'n1', T0);
      b.recovering('AGENT_TIMING', 'n1', T0 + 300);
      b.post('AM_CRASH', 'app-1', T0 + 100);
      b.resolve('AGENT_TIMING', 'n1', T0 + 1000);
      b.resolve('AM_CRASH', 'app-1', T0 + 600); // never marked recovering
      b.resolve('AM_CRASH', 'app-1', T0 + 700); // not open any more: nothing
      expect(b.takeResolved()).to.deep.equal([
        { kind: 'AGENT_TIMING', totalMs: 1000, detectMs: 300, recoverMs: 700 },
        { kind: 'AM_CRASH', totalMs: 500 },
      ]);
      expect(b.takeResolved()).to.deep.equal([]);
    });
  });
});
