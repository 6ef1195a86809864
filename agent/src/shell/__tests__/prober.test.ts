import { expect } from 'chai';
import * as dgram from 'node:dgram';
import { InvalidArgumentError } from '@fuxi/common';
import { decodeProbe, encodeProbe, probeDatagramBytes, Prober } from '../prober.js';
import { waitFor } from './helpers.js';

const HOST = '127.0.0.1';

describe('probe datagrams', () => {
  it('round-trips a ping and a pong', () => {
    const ping = encodeProbe({ kind: 'ping', nodeId: 'a1', seq: 42 });
    expect(ping.length).to.equal(probeDatagramBytes('a1')).and.to.equal(12);
    expect(ping.toString('latin1', 0, 4)).to.equal('FXPB');
    expect(decodeProbe(ping)).to.deep.equal({ kind: 'ping', nodeId: 'a1', seq: 42 });
    expect(decodeProbe(encodeProbe({ kind: 'pong', nodeId: 'nöde-7', seq: 2 ** 32 - 1 }))).to.deep.equal({ kind: 'pong', nodeId: 'nöde-7', seq: 2 ** 32 - 1 });
  });

  it('rejects garbage: short, another magic or kind, a length that does not match', () => {
    const ok = encodeProbe({ kind: 'ping', nodeId: 'a1', seq: 1 });
    expect(decodeProbe(Buffer.alloc(0))).to.equal(undefined);
    expect(decodeProbe(ok.subarray(0, ok.length - 1))).to.equal(undefined);
    expect(decodeProbe(Buffer.concat([ok, Buffer.from([0])]))).to.equal(undefined);
    const magic = Buffer.from(ok);
    magic[0] = 0x41;
    expect(decodeProbe(magic)).to.equal(undefined);
    const kind = Buffer.from(ok);
    kind[4] = 9;
    expect(decodeProbe(kind)).to.equal(undefined);
    const len = Buffer.from(ok);
    len[5] = 0;
    expect(decodeProbe(len)).to.equal(undefined);
    expect(() => encodeProbe({ kind: 'ping', nodeId: '', seq: 1 })).to.throw(RangeError);
  });
});

describe('Prober over loopback', function () {
  this.timeout(30_000);
  const probers: Prober[] = [];
  const sockets: dgram.Socket[] = [];
  afterEach(() => {
    probers.splice(0).forEach((p) => p.stop());
    sockets.splice(0).forEach((s) => s.close());
  });

  async function prober(nodeId: string, port = 0, fallbackToAnyPort = false): Promise<Prober> {
    const p = new Prober({ nodeId, host: HOST, port, fallbackToAnyPort, periodMs: 20, misses: 3 });
    probers.push(p);
    await p.start();
    return p;
  }

  it('answers pings with its own id and the round, and ignores garbage', async () => {
    const p = await prober('a1');
    const s = dgram.createSocket('udp4');
    sockets.push(s);
    const got: Buffer[] = [];
    s.on('message', (m) => got.push(m));
    await new Promise<void>((r) => s.bind(0, HOST, () => r()));
    s.send(Buffer.from('hello, not a probe'), p.port, HOST);
    s.send(encodeProbe({ kind: 'pong', nodeId: 'zz', seq: 1 }), p.port, HOST); // a pong nobody asked for
    s.send(encodeProbe({ kind: 'ping', nodeId: 'x9', seq: 77 }), p.port, HOST);
    await waitFor(() => got.length >= 1, 10_000, 'a pong');
    expect(got.map(decodeProbe)).to.deep.equal([{ kind: 'pong', nodeId: 'a1', seq: 77 }]);
    await waitFor(() => p.stats().garbage === 1 && p.stats().pongsReceived === 1, 10_000, 'the garbage counted');
    expect(p.stats()).to.include({ pingsReceived: 1, pongsSent: 1 });
    expect(p.core.unreachable()).to.deep.equal([]);
  });

  it('finds a peer that stops answering unreachable, and reachable again when it answers', async () => {
    const a1 = await prober('a1');
    const a2 = await prober('a2');
    a1.core.setTargets(1, [{ nodeId: 'a2', address: a2.address }], Date.now());
    a2.core.setTargets(1, [{ nodeId: 'a1', address: a1.address }], Date.now());
    await waitFor(() => a1.stats().pongsReceived >= 5 && a2.stats().pongsReceived >= 5, 10_000, 'answers both ways');
    expect(a1.core.unreachable()).to.deep.equal([]);
    const port = a2.port;
    a2.stop();
    await waitFor(() => a1.core.unreachable().includes('a2'), 10_000, 'a2 unreachable');
    expect(a1.core.report()).to.deep.include({ baseSeq: 0, unreachable: ['a2'] });
    const back = await prober('a2', port);
    expect(back.port).to.equal(port);
    await waitFor(() => a1.core.unreachable().length === 0, 10_000, 'a2 reachable again');
  });

  it('binds another port when a default port is taken, and names probe.port when a configured one is', async () => {
    const a1 = await prober('a1');
    const other = await prober('a2', a1.port, true);
    expect(other.port).to.be.greaterThan(0);
    expect(other.port).to.not.equal(a1.port);
    let err: unknown;
    try {
      await prober('a3', a1.port, false);
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).message).to.match(/probe\.port/);
  });
});
