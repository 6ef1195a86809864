import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InvalidArgumentError } from '@fuxi/common';
import { fetchUpstream, upstreamOutputs } from '../sdk/outputs.js';

describe('upstream outputs ($FUXI_UPSTREAM)', () => {
  const env = {
    FUXI_UPSTREAM: JSON.stringify({
      map: {
        hosts: ['10.0.0.7:7071', '10.0.0.8:7071'],
        outputs: [
          [0, 'map.0.1'],
          [1, 'map.1.2'],
          [-1, ''],
        ],
      },
    }),
  };

  it('lists where each instance of an upstream task ran', () => {
    expect(upstreamOutputs('map', env)).to.deep.equal([
      { task: 'map', instance: 0, workerId: 'map.0.1', address: '10.0.0.7:7071', nodeId: '' },
      { task: 'map', instance: 1, workerId: 'map.1.2', address: '10.0.0.8:7071', nodeId: '' },
      { task: 'map', instance: 2, workerId: '', address: '', nodeId: '' },
    ]);
  });

  it('names the problem: not set, not JSON, not an upstream task', () => {
    expect(() => upstreamOutputs('map', {})).to.throw(InvalidArgumentError, /FUXI_UPSTREAM: is not set/);
    expect(() => upstreamOutputs('map', { FUXI_UPSTREAM: '{' })).to.throw(InvalidArgumentError, /FUXI_UPSTREAM: is not JSON/);
    expect(() => upstreamOutputs('reduce', env)).to.throw(InvalidArgumentError, /task: "reduce" is not a task this one depends on \(upstream: map\)/);
  });
});

describe('fetchUpstream from an agent that does not answer', () => {
  const OUTPUTS = join(dirname(fileURLToPath(import.meta.url)), '..', 'sdk', 'outputs.js');
  const children: ChildProcess[] = [];

  /** A loopback port nothing listens on: every fetch fails UNAVAILABLE and is retried. */
  async function closedPort(): Promise<number> {
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const port = (srv.address() as AddressInfo).port;
    await new Promise<void>((r) => srv.close(() => r()));
    return port;
  }

  const envFor = (port: number) => ({
    FUXI_APP_ID: 'app-1',
    FUXI_UPSTREAM: JSON.stringify({ map: { hosts: [`127.0.0.1:${port}`], outputs: [[0, 'map.0.1']] } }),
  });

  afterEach(() => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null && c.pid) process.kill(c.pid, 'SIGKILL');
  });

  it('ends its retries when the signal aborts', async () => {
    const ac = new AbortController();
    const p = fetchUpstream('map', 0, 'part-0', { env: envFor(await closedPort()), retryForMs: 600_000, signal: ac.signal });
    setTimeout(() => ac.abort(), 300);
    let err: unknown;
    try {
      await p;
    } catch (e) {
      err = e;
    }
    expect(String(err)).to.match(/map\/0 part-0 from 127\.0\.0\.1:\d+/);
  });

  it('a worker stopped (SIGTERM) while it retries exits at once, without waiting out its retries', async () => {
    const port = await closedPort();
    const script = [
      `import { fetchUpstream } from ${JSON.stringify(OUTPUTS)};`,
      `process.stdout.write('fetching\\n');`,
      `await fetchUpstream('map', 0, 'part-0', { retryForMs: 600000 });`,
      `process.stdout.write('fetched\\n');`,
    ].join('\n');
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, ...envFor(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('exit', (code, signal) => r({ code, signal })));
    while (!out.includes('fetching')) await new Promise((r) => setTimeout(r, 20));
    // A few failed tries in, as the agent would stop it: SIGTERM to the process.
    await new Promise((r) => setTimeout(r, 500));
    child.kill('SIGTERM');
    expect(await exited).to.deep.equal({ code: null, signal: 'SIGTERM' });
    expect(out).to.equal('fetching\n');
  });
});
