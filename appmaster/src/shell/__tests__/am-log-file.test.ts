import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { AmLogFile, LOG_FLUSH_CHARS, LOG_FLUSH_MS } from '../am-log-file.js';

const closed = (f: AmLogFile, waitMs?: number) => new Promise<void>((resolve) => f.close(resolve, waitMs));

describe('a hosted AM log file (AmLogFile)', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-amlog-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('writes nothing until a batch is due, then every line in order; close ends with every line in the file', async () => {
    const file = path.join(dir, 'stdout');
    const log = new AmLogFile(file);
    log.write('one\n');
    log.write('two\n');
    await sleep(20);
    expect(fs.existsSync(file), 'nothing written before the batch is due').to.equal(false);
    await sleep(LOG_FLUSH_MS + 100);
    expect(fs.readFileSync(file, 'utf8')).to.equal('one\ntwo\n');
    log.write('three\n');
    await closed(log);
    expect(fs.readFileSync(file, 'utf8')).to.equal('one\ntwo\nthree\n');
    log.write('after the end\n');
    await sleep(LOG_FLUSH_MS + 100);
    expect(fs.readFileSync(file, 'utf8')).to.equal('one\ntwo\nthree\n');
  });

  it('appends to a file an earlier attempt left, and makes a missing directory', async () => {
    const file = path.join(dir, 'apps', 'job-1', 'am.1', 'stdout');
    const first = new AmLogFile(file);
    first.write('attempt 1\n');
    await closed(first);
    const second = new AmLogFile(file);
    second.write('attempt 2\n');
    await closed(second);
    expect(fs.readFileSync(file, 'utf8')).to.equal('attempt 1\nattempt 2\n');
  });

  it('hands lines over at once past the size limit, many batches in order while one is written', async () => {
    const file = path.join(dir, 'stdout');
    const log = new AmLogFile(file);
    const line = 'x'.repeat(999) + '\n';
    const n = Math.ceil((3 * LOG_FLUSH_CHARS) / line.length) + 7;
    for (let i = 0; i < n; i++) log.write(`${String(i).padStart(6, '0')}${line}`);
    await sleep(50);
    expect(fs.statSync(file).size, 'the full batches are written before their timer').to.be.at.least(LOG_FLUSH_CHARS);
    await closed(log);
    const got = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
    expect(got.map((l) => Number(l.slice(0, 6)))).to.deep.equal([...Array(n).keys()]);
  });

  it('a file that cannot be opened drops its lines and still closes', async () => {
    fs.writeFileSync(path.join(dir, 'not-a-dir'), '');
    const log = new AmLogFile(path.join(dir, 'not-a-dir', 'stdout'));
    log.write('lost\n');
    const t0 = Date.now();
    await closed(log, 5000);
    expect(Date.now() - t0).to.be.below(4000);
  });

  it('lines still waiting when the process exits are appended before it ends', () => {
    const file = path.join(dir, 'stdout');
    const mod = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'am-log-file.js');
    const script = `import { AmLogFile } from ${JSON.stringify(mod)}; const f = new AmLogFile(${JSON.stringify(file)}); f.write('last words\\n'); process.exit(0);`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(r.status, r.stderr).to.equal(0);
    expect(fs.readFileSync(file, 'utf8')).to.equal('last words\n');
  });
});
