/**
 * The bundled CLI as `make build` leaves it (client/dist/fuxi.bundle.cjs, its code cache, and the
 * bin that runs it, dist/fuxi.cjs), run as a separate process: help, local validation, an
 * unreachable master and a real submit; a copy of the two files alone in a temp folder, so the
 * bundle needs nothing from node_modules; the levels of its code cache; and a bundle older than a
 * source is not run.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, BUNDLE, clientDir, type Result } from './bundle-files.js';
import { FakeMaster } from './fake-cluster.js';

function fuxi(bin: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, FUXI_RETRY_MS: '0', FUXI_INSECURE: '1', ...env }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('bundled fuxi CLI (build output)', function () {
  this.timeout(90_000);
  let dir: string;
  let spec: string;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'fuxi-bundle-'));
    spec = join(dir, 'job.yaml');
    writeFileSync(spec, 'name: t\ntasks:\n  - name: t\n    instances: 1\n    resources: { cpu: 0.1, memory: 16Mi }\n    command: ["/bin/true"]\n');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('is the package bin (linked for npx), one bundle with its code cache', () => {
    const pkg = JSON.parse(readFileSync(join(clientDir, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(join(clientDir, pkg.bin.fuxi!)).to.equal(BIN);
    // What `npx fuxi` runs (the build links it when npm could not).
    expect(realpathSync(join(clientDir, '..', 'node_modules', '.bin', 'fuxi'))).to.equal(realpathSync(BIN));
    for (const f of [BIN, BUNDLE, `${BUNDLE}.cache`]) expect(existsSync(f), `${f} (make build writes it)`).to.equal(true);
  });

  it('prints help (exit 0) and rejects a bad spec locally (exit 2)', async () => {
    const help = await fuxi(BIN, ['--help']);
    expect(help.code, help.stderr).to.equal(0);
    expect(help.stdout).to.include('Exit codes:');
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, readFileSync(spec, 'utf8').replace('cpu: 0.1', 'cpu: -1'));
    const r = await fuxi(BIN, ['submit', bad]);
    expect(r.code).to.equal(2);
    expect(r.stderr).to.equal(`error: ${bad}: tasks[0].resources.cpu: must be greater than 0, got -1\n`);
  });

  it('exits 4 when no master answers', async () => {
    const r = await fuxi(BIN, ['--master', '127.0.0.1:1', 'status', 'x']);
    expect(r.code).to.equal(4);
    expect(r.stderr).to.match(/^error: master unavailable \(127\.0\.0\.1:1\): /);
  });

  it('submits to a master over gRPC, also when copied alone to another folder', async () => {
    const master = await new FakeMaster().start();
    try {
      const r = await fuxi(BIN, ['--master', master.address, 'submit', spec, '--id', 'bundle-1']);
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout).to.equal('bundle-1\n');
      const st = await fuxi(BIN, ['--master', master.address, 'status', 'bundle-1', '-o', 'json']);
      expect((JSON.parse(st.stdout) as { state: string }).state).to.equal('JOB_STATE_SUBMITTED');

      // The two files alone (no node_modules above them), without a cache: it runs and writes one.
      const alone = join(dir, 'alone');
      mkdirSync(alone);
      copyFileSync(BIN, join(alone, 'fuxi.cjs'));
      copyFileSync(BUNDLE, join(alone, 'fuxi.bundle.cjs'));
      const copy = await fuxi(join(alone, 'fuxi.cjs'), ['--master', master.address, 'submit', spec, '--id', 'bundle-2']);
      expect(copy.code, copy.stderr).to.equal(0);
      expect(copy.stdout).to.equal('bundle-2\n');
      expect(existsSync(join(alone, 'fuxi.bundle.cjs.cache'))).to.equal(true);
      expect([...master.jobs.keys()]).to.include.members(['bundle-1', 'bundle-2']);
    } finally {
      await master.stop();
    }
  });

  it("a code cache's level: a command that called the cluster replaces what `--help` or the build wrote, `--help` does not replace it", async () => {
    const master = await new FakeMaster().start();
    try {
      const alone = join(dir, 'levels');
      mkdirSync(alone);
      copyFileSync(BIN, join(alone, 'fuxi.cjs'));
      copyFileSync(BUNDLE, join(alone, 'fuxi.bundle.cjs'));
      const cache = join(alone, 'fuxi.bundle.cjs.cache');
      /** The cache's level (a float64 at byte 24) and its size. */
      const written = () => {
        const b = readFileSync(cache);
        return { level: b.readDoubleLE(24), bytes: b.length };
      };
      const run = async (args: string[]) => expect((await fuxi(join(alone, 'fuxi.cjs'), args)).code, args.join(' ')).to.equal(0);

      await run(['--help']);
      const help = written();
      expect(help.level).to.equal(0);
      await run(['--master', master.address, 'submit', spec, '--id', 'levels-1']);
      const call = written();
      expect(call.level).to.equal(0.5);
      expect(call.bytes).to.be.greaterThan(help.bytes);
      await run(['--help']);
      expect(written()).to.deep.equal(call);
      await run(['--master', master.address, 'status', 'levels-1']);
      expect(written()).to.deep.equal(call);

      // The build's level (0.25, scripts/bundle.mjs): `--help` keeps it, the first call replaces it.
      const build = Buffer.from(readFileSync(cache));
      build.writeDoubleLE(0.25, 24);
      writeFileSync(cache, build);
      await run(['--help']);
      expect(written().level).to.equal(0.25);
      await run(['--master', master.address, 'status', 'levels-1']);
      expect(written().level).to.equal(0.5);
    } finally {
      await master.stop();
    }
  });

  it("run as a program (its #! line), starts Node without the default trust store's variables", async () => {
    expect(readFileSync(BIN, 'utf8').split('\n')[0]).to.equal(
      '#!/usr/bin/env -S -u NODE_EXTRA_CA_CERTS -u SSL_CERT_DIR SSL_CERT_FILE=/dev/null node --use-openssl-ca',
    );
    const master = await new FakeMaster().start();
    try {
      // Node warns at start when NODE_EXTRA_CA_CERTS names no file: the bin's Node never sees it.
      const env = { ...process.env, FUXI_RETRY_MS: '0', FUXI_INSECURE: '1', NODE_EXTRA_CA_CERTS: join(dir, 'none.pem') };
      const r = await new Promise<Result>((resolve) =>
        execFile(BIN, ['--master', master.address, 'submit', spec, '--id', 'bundle-bin'], { env, timeout: 60_000 }, (err, stdout, stderr) =>
          resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        ),
      );
      expect([r.code, r.stdout, r.stderr]).to.deep.equal([0, 'bundle-bin\n', '']);
      const viaNode = await fuxi(BIN, ['--version'], { NODE_EXTRA_CA_CERTS: join(dir, 'none.pem') });
      expect(viaNode.stderr).to.include('Ignoring extra certs');
    } finally {
      await master.stop();
    }
  });

  it('runs the module tree instead of a bundle older than one of its sources (tsc -b without make build)', async () => {
    const stale = join(dir, 'stale');
    mkdirSync(stale);
    copyFileSync(BIN, join(stale, 'fuxi.cjs'));
    copyFileSync(BUNDLE, join(stale, 'fuxi.bundle.cjs'));
    writeFileSync(join(stale, 'fuxi.bundle.cjs.inputs.json'), JSON.stringify({ tree: 'tree.mjs', inputs: ['missing.js', 'input.js'] }));
    writeFileSync(join(stale, 'tree.mjs'), "process.stdout.write('module tree ' + process.argv.slice(2).join(' ') + '\\n');\n");
    writeFileSync(join(stale, 'input.js'), '');
    const past = new Date(Date.now() - 60_000);
    utimesSync(join(stale, 'fuxi.bundle.cjs'), past, past);
    const r = await fuxi(join(stale, 'fuxi.cjs'), ['--help']);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.equal('module tree --help\n');
    expect(r.stderr).to.equal('fuxi.cjs: input.js is newer than fuxi.bundle.cjs (make build rebuilds it); running the module tree\n');
    // Sources older than the bundle: the bundle runs.
    utimesSync(join(stale, 'input.js'), new Date(Date.now() - 120_000), new Date(Date.now() - 120_000));
    const fresh = await fuxi(join(stale, 'fuxi.cjs'), ['--help']);
    expect(fresh.stdout).to.include('Exit codes:');
    expect(fresh.stderr).to.equal('');
  });
});
