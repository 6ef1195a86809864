import { expect } from 'chai';
import { familyOf, markedRoot, newMembers, procKey, type FamilyQuery, type ProcEntry } from '../process-family.js';

/** A process: pid, ppid, start time; state 'S' and no marker unless given. */
const p = (pid: number, ppid: number, startTime: string, over: Partial<ProcEntry> = {}): ProcEntry => ({ pid, ppid, startTime, state: 'S', ...over });
const pids = (ps: ProcEntry[]) => ps.map((x) => x.pid);
const q = (over: Partial<FamilyQuery> = {}): FamilyQuery => ({ root: { pid: 100, startTime: '500' }, marker: 'm1', known: [], exclude: [1, 10], ...over });

/**
 * A host: init (1), the agent (10, child of 1), worker root 100 (child of the agent) with a child
 * 101 and grandchild 102; 200 a setsid'd, double-forked child of 101 now under init that kept the
 * marker; 300 an unrelated process with a child 301; 400 a zombie of the family.
 */
const host = (): ProcEntry[] => [
  p(1, 0, '1'),
  p(10, 1, '50'),
  p(100, 10, '500', { marker: 'm1' }),
  p(101, 100, '510', { marker: 'm1' }),
  p(102, 101, '520'), // scrubbed its environment, still a descendant
  p(200, 1, '530', { marker: 'm1' }),
  p(201, 200, '540'),
  p(300, 1, '600'),
  p(301, 300, '610', { marker: 'other' }),
  p(400, 100, '700', { state: 'Z', marker: 'm1' }),
];

describe('process family (pure)', () => {
  it('is the root, its descendants, and every marked process with its descendants; never a zombie', () => {
    expect(pids(familyOf(host(), q()))).to.deep.equal([100, 101, 102, 200, 201]);
  });

  it("with the pids of the worker's cgroup, also an unmarked process under init that no sample saw, with its children; never an excluded pid", () => {
    const procs = [...host(), p(500, 1, '800'), p(501, 500, '810')];
    expect(pids(familyOf(procs, q({ marker: '', inGroup: new Set([500, 10]) })))).to.deep.equal([100, 101, 102, 500, 501]);
    expect(pids(familyOf(procs, q({ marker: '' })))).to.deep.equal([100, 101, 102]);
  });

  it('finds marked processes that left the tree even when the root is gone', () => {
    const procs = host().filter((x) => x.pid !== 100);
    expect(pids(familyOf(procs, q()))).to.deep.equal([101, 102, 200, 201]);
  });

  it('without a marker, only the root and its descendants (plus what was remembered)', () => {
    expect(pids(familyOf(host(), q({ marker: '' })))).to.deep.equal([100, 101, 102]);
    // 201 scrubbed its environment and its parent is under init now: only a remembered sighting finds it.
    const procs = host().map((x) => (x.pid === 200 ? { ...x, marker: undefined } : x));
    expect(pids(familyOf(procs, q()))).to.deep.equal([100, 101, 102]);
    expect(pids(familyOf(procs, q({ known: [{ pid: 200, startTime: '530' }] })))).to.deep.equal([100, 101, 102, 200, 201]);
  });

  it('never takes a reused pid: the root and remembered members match by pid AND start time', () => {
    // Pid 100 now belongs to another process (another start time), with a child.
    const procs = [p(1, 0, '1'), p(100, 1, '900'), p(150, 100, '910'), p(250, 1, '920')];
    expect(familyOf(procs, q({ marker: '' }))).to.deep.equal([]);
    expect(familyOf(procs, q({ marker: '', known: [{ pid: 250, startTime: '530' }] }))).to.deep.equal([]);
    expect(pids(familyOf(procs, q({ marker: '', known: [{ pid: 250, startTime: '920' }] })))).to.deep.equal([250]);
    // An empty start time never matches.
    expect(familyOf([p(100, 1, '')], q({ marker: '', root: { pid: 100, startTime: '' } }))).to.deep.equal([]);
  });

  it('never includes excluded pids (the agent, init), even when marked, nor walks through them', () => {
    const procs = [p(1, 0, '1', { marker: 'm1' }), p(10, 1, '50', { marker: 'm1' }), p(11, 10, '60'), p(100, 10, '500', { marker: 'm1' })];
    expect(pids(familyOf(procs, q()))).to.deep.equal([100]);
  });

  it('a process of another family with the same command line and parent is untouched', () => {
    const procs = [...host(), p(500, 10, '800', { marker: 'm2' }), p(501, 500, '810', { marker: 'm2' })];
    expect(pids(familyOf(procs, q()))).to.not.include.members([500, 501]);
    expect(pids(familyOf(procs, q({ root: { pid: 500, startTime: '800' }, marker: 'm2' })))).to.deep.equal([500, 501]);
  });

  it('markedRoot: the earliest started marked process whose parent is not marked; never a zombie', () => {
    expect(markedRoot(host(), 'm1')).to.deep.equal({ pid: 100, startTime: '500' });
    // The root gone: the earliest of what it left (101, under init now, before the double-forked 200).
    const orphaned = host()
      .filter((x) => x.pid !== 100)
      .map((x) => (x.pid === 101 ? { ...x, ppid: 1 } : x));
    expect(markedRoot(orphaned, 'm1')).to.deep.equal({ pid: 101, startTime: '510' });
    expect(markedRoot([p(1, 0, '1'), p(400, 1, '700', { state: 'Z', marker: 'm1' })], 'm1')).to.equal(undefined);
    expect(markedRoot(host(), 'm9')).to.equal(undefined);
    expect(markedRoot([p(5, 1, '5')], '')).to.equal(undefined);
  });

  it('newMembers: those not yet seen, by pid and start time', () => {
    const fam = familyOf(host(), q());
    const seen = new Set([procKey({ pid: 100, startTime: '500' }), procKey({ pid: 101, startTime: '999' })]);
    expect(pids(newMembers(fam, seen))).to.deep.equal([101, 102, 200, 201]);
  });
});
