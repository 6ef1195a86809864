/**
 * AmHostSupervisor's connection to its host, where the order of messages on the socket and the
 * connection's own life matter: an AM's exit written in the same read as the answer that started
 * it, and a connection that drops while the host lives on (the next start must not double the
 * host; AMs that ended meanwhile, and stops asked for meanwhile, are not lost).
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { nullLogger, type HostedAmSpec } from '@fuxi/common';
import { AmHostConnection } from '../am-host-client.js';
import { AmHostSupervisor, readHostRecord, type HostedExit } from '../am-host-supervisor.js';
import { alive, waitFor, removeWorkDir } from './helpers.js';

const HOST_MAIN = fileURLToPath(new URL('../../../../appmaster/dist/shell/am-host-main.js', import.meta.url));

/**
 * The program of a host the test runs: it listens on its --socket and runs `onMessage` (a script
 * with `c`, the connection, `m`, the message, and `answer(extra)`) for each line; `before` is
 * its state.
 */
function fakeHost(before: string, onMessage: string): string {
  return `
const net = require('node:net');
const fs = require('node:fs');
const path = require('node:path');
const sock = process.argv[process.argv.indexOf('--socket') + 1];
fs.rmSync(sock, { force: true });
${before}
net.createServer((c) => {
  let rest = '';
  c.on('data', (d) => {
    const lines = (rest + d).split('\\n');
    rest = lines.pop();
    for (const l of lines) {
      const m = JSON.parse(l);
      const answer = (extra) => c.write(JSON.stringify({ id: m.id, ok: true, ...extra }) + '\\n');
      ${onMessage}
    }
  });
}).listen(sock);
`;
}

/** A host that answers every request, and follows the answer to a start with that AM's exit, in one write. */
const INSTANT_EXIT_HOST = fakeHost(
  '',
  `let out = JSON.stringify({ id: m.id, ok: true, ams: [] }) + '\\n';
      if (m.op === 'start') out += JSON.stringify({ ev: 'exit', key: m.am.key, appId: m.am.appId, workerId: m.am.workerId, exitCode: 1, signal: null, message: 'could not start' }) + '\\n';
      c.write(out);`,
);

/**
 * A host run by the test: a `stats` request makes it drop the agent's connection, end AM `x` on
 * its own meanwhile (its exit file says 3; the event goes to no one) and answer the next hellos
 * only after 1 s; a stop ends the AM with an exit event.
 */
const DROPPING_HOST = fakeHost(
  `const running = new Map();
let slowHello = false;
let agent;`,
  `if (m.op === 'hello') {
        const hello = () => { agent = c; answer({ ams: [...running.values()].map((am) => ({ key: am.key })) }); };
        if (slowHello) setTimeout(hello, 1000); else hello();
      } else if (m.op === 'start') {
        running.set(m.am.key, m.am);
        answer({});
      } else if (m.op === 'stop') {
        const am = running.get(m.key);
        running.delete(m.key);
        answer({});
        if (am) agent.write(JSON.stringify({ ev: 'exit', key: am.key, appId: am.appId, workerId: am.workerId, exitCode: 0, signal: null, message: 'stopped' }) + '\\n');
      } else if (m.op === 'stats') {
        const x = [...running.values()].find((am) => am.appId === 'x');
        running.delete(x.key);
        fs.mkdirSync(x.dir, { recursive: true });
        fs.writeFileSync(path.join(x.dir, 'exit'), '3\\n');
        slowHello = true;
        c.destroy();
      } else answer({});`,
);

/**
 * A host run by the test, slow as a host starting on a busy machine: it answers each hello 400 ms
 * late and each start 300 ms late and, as the real one does, takes a later agent hello over an
 * earlier connection (the earlier one is closed). Each connection it accepts is a line of
 * `<socket>.<pid>.conns`.
 */
const SLOW_HELLO_HOST = fakeHost(
  `let agent;
const conns = sock + '.' + process.pid + '.conns';`,
  `if (m.op === 'hello')
        setTimeout(() => {
          fs.appendFileSync(conns, 'agent\\n');
          if (agent && agent !== c) agent.destroy();
          agent = c;
          answer({ ams: [] });
        }, 400);
      else if (m.op === 'start') setTimeout(() => answer({}), 300);
      else answer({});`,
);

describe('AmHostSupervisor (its connection to the host)', function () {
  this.timeout(60_000);
  let workDir = '';
  const sups: AmHostSupervisor[] = [];
  const pids = new Set<number>();

  beforeEach(() => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-amhost-sup-'));
  });
  afterEach(async () => {
    for (const s of sups.splice(0)) s.close();
    const rec = readHostRecord(workDir);
    if (rec) pids.add(rec.pid);
    for (const pid of pids) {
      if (!alive(pid)) continue;
      process.kill(-pid, 'SIGKILL');
      for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
    }
    pids.clear();
    removeWorkDir(workDir);
  });

  function supervisor(command: string[]): { sup: AmHostSupervisor; exits: HostedExit[] } {
    const sup = new AmHostSupervisor({ workDir, command, threadInstances: 10_000, log: nullLogger, pingMs: 200 });
    const exits: HostedExit[] = [];
    sup.onExit((e) => exits.push(e));
    sups.push(sup);
    return { sup, exits };
  }

  const spec = (appId: string): HostedAmSpec => ({
    key: `${appId}/am.1`,
    appId,
    workerId: 'am.1',
    dir: path.join(workDir, appId),
    env: { FUXI_MASTER: '127.0.0.1:1', FUXI_APP_ID: appId, FUXI_AM_ATTEMPT: '1', FUXI_NODE_ID: 'n1', FUXI_LOG_LEVEL: 'warn' },
  });

  it('reports an AM whose exit came in the same read as the answer to its start, once, after the start', async () => {
    const script = path.join(workDir, 'instant-exit-host.cjs');
    fs.writeFileSync(script, INSTANT_EXIT_HOST);
    const { sup, exits } = supervisor([process.execPath, script]);
    const started = await sup.start(spec('a'));
    pids.add(started.pid);
    // Not before the start has resolved: the agent takes the spawn first, or drops the exit.
    expect(exits).to.deep.equal([]);
    await waitFor(() => exits.length === 1, 5000, 'the exit');
    expect(exits[0]).to.deep.include({ appId: 'a', workerId: 'am.1', exitCode: 1 });
    expect(sup.knows('a/am.1')).to.equal(false);
    await new Promise((r) => setTimeout(r, 200));
    expect(exits).to.have.length(1);
  });

  it('connects again to a live host whose connection dropped: one host, and no exit or stop lost', async () => {
    const { sup, exits } = supervisor([process.execPath, HOST_MAIN]);
    const first = await sup.start(spec('x'));
    pids.add(first.pid);
    // Another connection says hello as the agent: the host drops the supervisor's.
    const other = await AmHostConnection.open(readHostRecord(workDir)!.socket, { timeoutMs: 5000 });
    try {
      await other.request({ op: 'hello', role: 'agent' });
      // While the supervisor is not connected, x is stopped by the other connection (its exit goes there).
      await other.request({ op: 'stop', key: 'x/am.1', graceMs: 500 });
      await waitFor(() => fs.existsSync(path.join(spec('x').dir, 'exit')), 10_000, "x's exit file");
    } finally {
      other.close();
    }
    const second = await sup.start(spec('y'));
    expect(second.pid).to.equal(first.pid); // the same host, not a second one
    expect(readHostRecord(workDir)!.pid).to.equal(first.pid);
    // x ended while no connection was the supervisor's: its end is read from its exit file.
    await waitFor(() => exits.some((e) => e.appId === 'x'), 10_000, "x's exit");
    expect(sup.knows('x/am.1')).to.equal(false);
    sup.stop('y/am.1', 500);
    await waitFor(() => exits.some((e) => e.appId === 'y'), 10_000, "y's exit");
    expect(exits.map((e) => e.appId).sort()).to.deep.equal(['x', 'y']);
  });
  it('while its connection is down: a start waits for it (one host), a stop is sent once it is back, an AM that ended meanwhile is read from its exit file', async () => {
    const script = path.join(workDir, 'dropping-host.cjs');
    fs.writeFileSync(script, DROPPING_HOST);
    const { sup, exits } = supervisor([process.execPath, script]);
    const first = await sup.start(spec('x'));
    pids.add(first.pid);
    await sup.start(spec('z'));
    expect(await sup.stats(2000)).to.equal(undefined); // the host drops the connection instead
    sup.stop('z/am.1', 500); // no connection now: sent once there is one
    const second = await sup.start(spec('y'));
    expect(second.pid).to.equal(first.pid);
    expect(readHostRecord(workDir)!.pid).to.equal(first.pid);
    await waitFor(() => exits.length === 2, 10_000, 'the exits of x and z');
    expect(exits.map((e) => [e.appId, e.exitCode]).sort()).to.deep.equal([
      ['x', 3],
      ['z', 0],
    ]);
    expect([sup.knows('x/am.1'), sup.knows('y/am.1'), sup.knows('z/am.1')]).to.deep.equal([false, true, false]);
  });
  it('starting a new host after its crash: one connection to it, so the start that waited for it is not cut off', async () => {
    const script = path.join(workDir, 'slow-hello-host.cjs');
    fs.writeFileSync(script, SLOW_HELLO_HOST);
    const { sup, exits } = supervisor([process.execPath, script]);
    const first = await sup.start(spec('a'));
    pids.add(first.pid);
    // The host dies with an AM: the supervisor starts another at once. Its pings (every 200 ms)
    // run while the new host is answering the start's hello, and must not open a second agent
    // connection: the host would take it over the first one, on which the next start goes out.
    process.kill(-first.pid, 'SIGKILL');
    await waitFor(() => exits.some((e) => e.appId === 'a'), 10_000, "a's end with its host");
    const second = await sup.start(spec('b'));
    pids.add(second.pid);
    expect(second.pid).to.not.equal(first.pid);
    await new Promise((r) => setTimeout(r, 1000)); // pings go on
    const conns = fs
      .readFileSync(`${readHostRecord(workDir)!.socket}.${second.pid}.conns`, 'utf8')
      .split('\n')
      .filter(Boolean);
    expect(conns).to.have.length(1);
    expect(sup.knows('b/am.1')).to.equal(true);
    expect(exits.map((e) => e.appId)).to.deep.equal(['a']);
  });
});
