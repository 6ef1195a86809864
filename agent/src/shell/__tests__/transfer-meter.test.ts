import { expect } from 'chai';
import { TransferMeter } from '../transfer-meter.js';

describe('transfer meter (the data service measures every transfer it serves)', () => {
  const reader = { appId: 'app1', srcWorker: 'map.2.1', readerWorker: 'reduce.0.1', readerNode: 'n1' };

  it('reports transfers in flight every round with their growing time, and a finished one once more', () => {
    const m = new TransferMeter('n3');
    const t = m.begin(reader, 1000);
    m.add(t, 65536);
    expect(m.drain(1500)).to.deep.equal([
      {
        appId: 'app1',
        records: [{ srcNode: 'n3', dstNode: 'n1', srcWorker: 'map.2.1', readerWorker: 'reduce.0.1', bytes: '65536', elapsedMs: '500', done: false }],
      },
    ]);
    // No byte since: still reported (a stalled read), its time grows.
    expect(m.drain(2500)[0]!.records[0]).to.deep.include({ bytes: '65536', elapsedMs: '1500', done: false });
    m.add(t, 1000);
    m.end(t, 3000, true);
    expect(m.drain(4000)[0]!.records[0]).to.deep.include({ bytes: '66536', elapsedMs: '2000', done: true });
    expect(m.drain(5000)).to.deep.equal([]);
    expect(m.size).to.equal(0);
  });

  it('continues a resumed fetch in the same record, and measures nothing for a reader that does not name itself', () => {
    const m = new TransferMeter('n3');
    const a = m.begin(reader, 1000);
    m.add(a, 100);
    m.end(a, 1200, false);
    const b = m.begin(reader, 1300);
    m.add(b, 50);
    m.end(b, 1400, true);
    expect(m.drain(1500)[0]!.records[0]).to.deep.include({ bytes: '150', elapsedMs: '400', done: true });
    expect(m.begin({ ...reader, readerWorker: '' }, 1000)).to.equal(undefined);
  });
});
