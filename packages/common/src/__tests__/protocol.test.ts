import { expect } from 'chai';
import { acceptTable, isWorkerActive, isWorkerTerminal } from '../protocol.js';

describe('table acceptance (grant and assignment tables)', () => {
  const applied = { epoch: '5', seq: 7n };

  it('applies the next delta of the same master and ignores any other delta', () => {
    expect(acceptTable(applied, { epoch: '5', seq: 8n, full: false })).to.deep.equal({ kind: 'apply', newerMaster: false });
    expect(acceptTable(applied, { epoch: '5', seq: 9n, full: false })).to.deep.equal({ kind: 'out-of-order', base: 7n });
    expect(acceptTable(applied, { epoch: '5', seq: 7n, full: false })).to.deep.equal({ kind: 'out-of-order', base: 7n });
  });

  it('applies a delta with a base only on exactly that table, whatever numbers it skips', () => {
    expect(acceptTable(applied, { epoch: '5', seq: 12n, full: false, base: 7n })).to.deep.equal({ kind: 'apply', newerMaster: false });
    // Made from table 6 or 8: the entries that changed from there to 7 would stay wrong.
    expect(acceptTable(applied, { epoch: '5', seq: 12n, full: false, base: 6n })).to.deep.equal({ kind: 'out-of-order', base: 7n });
    expect(acceptTable(applied, { epoch: '5', seq: 12n, full: false, base: 8n })).to.deep.equal({ kind: 'out-of-order', base: 7n });
    // Never one that does not move the table on.
    expect(acceptTable(applied, { epoch: '5', seq: 7n, full: false, base: 7n })).to.deep.equal({ kind: 'out-of-order', base: 7n });
    // A newer master's delta needs its full table first.
    expect(acceptTable(applied, { epoch: '6', seq: 3n, full: false, base: 7n })).to.deep.equal({ kind: 'out-of-order', base: 0n });
  });

  it('applies a full table unless a newer message of the same master overtook it', () => {
    expect(acceptTable(applied, { epoch: '5', seq: 7n, full: true })).to.deep.equal({ kind: 'apply', newerMaster: false });
    expect(acceptTable(applied, { epoch: '5', seq: 20n, full: true })).to.deep.equal({ kind: 'apply', newerMaster: false });
    expect(acceptTable(applied, { epoch: '5', seq: 6n, full: true })).to.deep.equal({ kind: 'older-full', base: 7n });
  });

  it('counts a newer master from seq 0: its full table always applies, its first delta is seq 1', () => {
    expect(acceptTable(applied, { epoch: '6', seq: 0n, full: true })).to.deep.equal({ kind: 'apply', newerMaster: true });
    expect(acceptTable(applied, { epoch: '6', seq: 1n, full: false })).to.deep.equal({ kind: 'apply', newerMaster: true });
    expect(acceptTable(applied, { epoch: '6', seq: 8n, full: false })).to.deep.equal({ kind: 'out-of-order', base: 0n });
  });

  it('calls a message from an older master stale, compared as int64 (not as strings)', () => {
    expect(acceptTable(applied, { epoch: '4', seq: 100n, full: true })).to.deep.equal({ kind: 'stale' });
    expect(acceptTable({ epoch: '10', seq: 1n }, { epoch: '9', seq: 2n, full: false })).to.deep.equal({ kind: 'stale' });
  });
});

describe('worker states', () => {
  it('tells ended workers and workers holding a slot', () => {
    expect(['SUCCEEDED', 'FAILED', 'KILLED', 'REJECTED'].every((s) => isWorkerTerminal(s as never))).to.equal(true);
    expect(isWorkerTerminal('RUNNING')).to.equal(false);
    expect(isWorkerActive('STARTING') && isWorkerActive('RUNNING')).to.equal(true);
    expect(isWorkerActive('PENDING')).to.equal(false);
  });
});
