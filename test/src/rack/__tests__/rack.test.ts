/**
 * The rack harness itself, with real namespaces: hosts reach each other and the test process;
 * cut, isolate and heal; a token bucket slows a host's link; nothing is left behind by destroy()
 * or, after a run that never called it, by the sweep. On a machine that cannot build a rack the
 * suite fails with the one-line reason (never a silent skip).
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { connect } from 'node:net';
import { Rack } from '../rack.js';

const PREFIX = 'fxu';
const SUBNET = '10.213.9';
/** A server on port 9000 that sends `bytes` bytes to whoever connects. */
const server = (bytes: number) => `require('net').createServer((s) => s.end(Buffer.alloc(${bytes}, 120))).listen(9000, '0.0.0.0')`;

function leftovers(): string[] {
  const out: string[] = [];
  out.push(
    ...execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.startsWith(`${PREFIX}-`)),
  );
  out.push(
    ...execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.includes(` ${PREFIX}-`)),
  );
  out.push(
    ...execFileSync('ip', ['route', 'show'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.includes(`${SUBNET}.`)),
  );
  return out;
}

describe('the rack: hosts in network namespaces', function () {
  this.timeout(120_000);
  let rack: Rack | undefined;

  before(async function () {
    const reason = Rack.preflight();
    if (reason) throw new Error(reason);
    rack = await Rack.create({
      prefix: PREFIX,
      subnet: SUBNET,
      hosts: [
        { name: 'h1', octet: 11 },
        { name: 'h2', octet: 12 },
        { name: 'h3', octet: 13 },
      ],
    });
    rack.spawn('h1', process.execPath, ['-e', server(1_000_000)]);
    await until(async () => (await fetchFrom('h2', 'h1')).code === 0);
  });
  after(async () => {
    await rack?.destroy();
  });

  /** Host `from` reads everything host `to` serves: exit code (0 ok, 2 error, 3 timeout) and ms. */
  async function fetchFrom(from: string, to: string, timeoutMs = 2000): Promise<{ code: number; ms: number }> {
    const ip = rack!.host(to).ip;
    const t0 = Date.now();
    const r = await rack!.exec(
      from,
      process.execPath,
      [
        '-e',
        `const s=require('net').connect(9000,'${ip}');s.setTimeout(${timeoutMs},()=>process.exit(3));s.on('data',()=>{});s.on('end',()=>process.exit(0));s.on('error',()=>process.exit(2))`,
      ],
      { timeoutMs: 60_000 },
    );
    return { code: r.code, ms: Date.now() - t0 };
  }

  function fromTester(to: string, timeoutMs = 2000): Promise<boolean> {
    return new Promise((resolve) => {
      const s = connect(9000, rack!.host(to).ip);
      s.setTimeout(timeoutMs, () => (s.destroy(), resolve(false)));
      s.on('data', () => undefined);
      s.on('end', () => resolve(true));
      s.on('error', () => resolve(false));
    });
  }

  it('gives each host its own address, reachable from the other hosts and from the test process', async () => {
    expect(rack!.hosts.map((h) => h.ip)).to.deep.equal([`${SUBNET}.11`, `${SUBNET}.12`, `${SUBNET}.13`]);
    expect(rack!.bridgeIp).to.equal(`${SUBNET}.1`);
    expect((await fetchFrom('h2', 'h1')).code).to.equal(0);
    expect((await fetchFrom('h3', 'h1')).code).to.equal(0);
    expect(await fromTester('h1')).to.equal(true);
    const addrs = (await rack!.exec('h1', 'ip', ['-o', '-4', 'addr', 'show'])).stdout;
    expect(addrs).to.contain(`${SUBNET}.11/24`);
  });

  it('cuts and heals the link between two hosts, leaving the others', async () => {
    await rack!.cut('h1', 'h2');
    expect((await fetchFrom('h2', 'h1')).code, 'h2 -> h1 after the cut').to.not.equal(0);
    expect((await fetchFrom('h3', 'h1')).code, 'h3 -> h1 still').to.equal(0);
    await rack!.heal('h1', 'h2');
    expect((await fetchFrom('h2', 'h1')).code, 'h2 -> h1 after healing').to.equal(0);
  });

  it('isolates a host from everyone, the test process included, and heals it', async () => {
    await rack!.isolate('h1');
    expect((await fetchFrom('h2', 'h1')).code).to.not.equal(0);
    expect(await fromTester('h1')).to.equal(false);
    const local = await rack!.exec('h1', process.execPath, [
      '-e',
      "const s=require('net').connect(9000,'127.0.0.1');s.on('data',()=>{});s.on('end',()=>process.exit(0));s.on('error',()=>process.exit(2))",
    ]);
    expect(local.code, 'loopback inside the isolated host').to.equal(0);
    await rack!.healAll();
    expect((await fetchFrom('h2', 'h1')).code).to.equal(0);
    expect(await fromTester('h1')).to.equal(true);
  });

  it("slows a host's link with a token bucket", async () => {
    const fast = await fetchFrom('h2', 'h1', 30_000);
    await rack!.slow('h1', '1mbit');
    const slow = await fetchFrom('h2', 'h1', 30_000);
    await rack!.unslow('h1');
    const again = await fetchFrom('h2', 'h1', 30_000);
    expect(slow.code).to.equal(0);
    // 1 MB at 1 Mbit/s is about 8 s; unslowed it is well under a second.
    expect(slow.ms, `slowed ${slow.ms} ms, unslowed ${fast.ms} ms`).to.be.greaterThan(4 * Math.max(fast.ms, 250));
    expect(again.ms, 'back to full speed').to.be.lessThan(slow.ms / 2);
  });

  it('leaves nothing behind: destroy(), and the sweep of a run that never called it', async () => {
    await rack!.destroy();
    expect(leftovers()).to.deep.equal([]);
    // A run killed before destroy(): the next create() (or a sweep) removes what it made.
    const orphan = await Rack.create({ prefix: PREFIX, subnet: SUBNET, hosts: [{ name: 'h9', octet: 99 }] });
    const child = orphan.spawn('h9', 'sleep', ['600']);
    expect(leftovers().length).to.be.greaterThan(0);
    await Rack.sweep(PREFIX);
    expect(leftovers()).to.deep.equal([]);
    await until(() => child.exitCode !== null || child.signalCode !== null);
    await orphan.destroy();
  });
});

async function until(fn: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}
