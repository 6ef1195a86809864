#!/usr/bin/env node
// After `tsc -b` (`make build`, `npm run bundle`): bundles the programs whose cold start matters
// into one CommonJS file each with esbuild, so a new process reads one file instead of resolving
// and loading a few hundred modules:
//   fuxi            client/dist/fuxi.cjs            (bundle: fuxi.bundle.cjs)
//   fuxi-appmaster  appmaster/dist/fuxi-appmaster.cjs (bundle: fuxi-appmaster.bundle.cjs; one per job)
//   fuxi-amhost     appmaster/dist/fuxi-amhost.cjs    (bundle: fuxi-amhost.bundle.cjs; its start is
//                   on the way back of every AM a crashed host held)
// Each bin is scripts/bundle-launcher.cjs, which runs the bundle with a V8 code cache, written
// here by a warm-up run of each (loopback only: a master at 127.0.0.1:1 that is not there). Also
// makes every workspace `bin` executable and links it in node_modules/.bin (for npx).
// --metafile also writes what went into each bundle (<bundle>.meta.json).
import { build } from 'esbuild';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The CLI never logs, but `@fuxi/common` (whose index the bundle evaluates whole, since the CLI
 * loads its client lazily) imports pino for `createLogger`: give it a stub that throws if called.
 */
const noPino = {
  name: 'no-pino',
  setup(b) {
    b.onResolve({ filter: /^pino$/ }, () => ({ path: 'pino', namespace: 'no-pino' }));
    b.onLoad({ filter: /.*/, namespace: 'no-pino' }, () => ({
      contents: "export function pino() { throw new Error('pino is not part of this bundle'); }",
      loader: 'js',
    }));
  },
};

/** The build id's place in a bundle before it is known: the id is a hash of the bundle with this. */
const NO_ID = '0'.repeat(16);

/** Where warm-up runs put what they make (the AM host its socket); removed at the end. */
const warmDir = mkdtempSync(join(tmpdir(), 'fuxi-bundle-'));

const BUNDLES = [
  {
    entry: 'client/dist/cli/main.js',
    bin: 'client/dist/fuxi.cjs',
    plugins: [noPino],
    // The CLI trusts exactly the cluster CA it is given (--tls-ca, FUXI_TLS_CA: a context with `ca`
    // gets a store of its own with that CA alone), so the default store is never used; the line
    // keeps Node from building it. Node 20 reads and parses NODE_EXTRA_CA_CERTS at every start,
    // before any code runs (45 ms with the 144 certificates of Debian's ca-certificates), and builds
    // the default store at the first context with a `ca` too, only to compare it with the context's
    // own: its 140 bundled roots (20 ms) or, with --use-openssl-ca, OpenSSL's default paths, whose
    // file (Debian: /usr/lib/ssl/cert.pem, the same 144 certificates; 27 ms in a CPU profile, 3-4 ms
    // in alternating timed runs) is read at
    // once; SSL_CERT_FILE=/dev/null makes that file empty, the directory is looked up lazily.
    // `env -S` (GNU coreutils 8.30+) splits the line; each `-u` drops a variable.
    shebang: '#!/usr/bin/env -S -u NODE_EXTRA_CA_CERTS -u SSL_CERT_DIR SSL_CERT_FILE=/dev/null node --use-openssl-ca',
    // Run by the bin before the bundle: hands short commands to the user's CLI server
    // (FUXI_CLI_SERVER=1). Node's own modules only; no code cache (it is a few KB).
    fastPath: { entry: 'client/dist/cli/fast-path.js', out: 'client/dist/fuxi-fast.cjs' },
    // A submit to a master that is not there runs the spec reader, the client, the wire encoding
    // and a connection attempt; it must exit 4 (master unavailable). It makes no TLS connection
    // and decodes no answer, so its cache gets level 0.25: the first command that calls a cluster
    // (0.5) writes its own. With the cache of one `fuxi cluster status`, that command took 8.8 ms
    // less than with this one (medians of the paired differences of 40 alternating runs).
    warmUp: {
      args: ['submit', join(root, 'deploy/examples/wordcount/job.yaml'), '--master', '127.0.0.1:1'],
      env: { FUXI_RETRY_MS: '0', FUXI_INSECURE: '1' },
      exit: 4,
      level: 0.25,
    },
  },
  {
    entry: 'appmaster/dist/shell/main.js',
    bin: 'appmaster/dist/fuxi-appmaster.cjs',
    plugins: [],
    // An AM whose master is not there starts its server and retries RegisterApp until stopped:
    // the launcher writes the cache 0.5 s in, then the run is stopped.
    warmUp: { args: [], env: { FUXI_MASTER: '127.0.0.1:1', FUXI_APP_ID: 'warm-up', FUXI_LOG_LEVEL: 'silent', FUXI_INSECURE: '1' }, untilCache: true },
  },
  {
    entry: 'appmaster/dist/shell/am-host-main.js',
    bin: 'appmaster/dist/fuxi-amhost.cjs',
    plugins: [],
    // A host with no agent listens on its socket and waits: the launcher writes the cache 0.5 s in,
    // then the run is stopped.
    warmUp: { args: ['--socket', join(warmDir, 'amhost.sock'), '--log-level', 'silent'], env: {}, untilCache: true },
  },
];

/** Runs the bin once so that the launcher writes the bundle's code cache; false if it did not. */
async function warmUp(bin, cache, w) {
  const child = spawn(process.execPath, [bin, ...w.args], { env: { ...process.env, ...w.env }, stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000 });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  if (w.untilCache) {
    for (let i = 0; i < 200 && !existsSync(cache) && child.exitCode === null; i++) await sleep(50);
    child.kill('SIGKILL');
  }
  const code = await exited;
  if ((!w.untilCache && code !== w.exit) || !existsSync(cache)) {
    console.error(`bundle.mjs: ${bin} failed its warm-up run (exit ${code}${w.untilCache ? '' : `, expected ${w.exit}`}):\n${stderr}`);
    return false;
  }
  return true;
}

for (const b of BUNDLES) {
  const bundle = join(root, b.bin.replace(/\.cjs$/, '.bundle.cjs'));
  const result = await build({
    entryPoints: [join(root, b.entry)],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    minify: true,
    // What only health and reflection load, on their first call (packages/rpc introspection.ts),
    // and what grpc-js loads only for channelz / ORCA: left to Node's resolver, from the
    // installation's node_modules. import.meta.url (for createRequire) is the bundle's own URL.
    external: ['@grpc/proto-loader', '@grpc/reflection', 'grpc-health-check'],
    define: { 'import.meta.url': '__bundleUrl' },
    // The build id (NO_ID here, the bundle's hash once written, below) keys the bundle's code cache (bundle-launcher.cjs).
    banner: { js: `var __bundleUrl = require('node:url').pathToFileURL(__filename).href; /* fuxi-build ${NO_ID} */` },
    plugins: b.plugins,
    logLevel: 'warning',
    metafile: true,
  });
  const code = readFileSync(bundle, 'utf8');
  writeFileSync(bundle, code.replace(`/* fuxi-build ${NO_ID} */`, `/* fuxi-build ${createHash('sha256').update(code).digest('hex').slice(0, 16)} */`));
  if (process.argv.includes('--metafile')) writeFileSync(`${bundle}.meta.json`, JSON.stringify(result.metafile));
  // The repository's files it was built from, for the launcher's staleness check (paths relative
  // to the bundle), and the module tree's entry to run instead when one is newer.
  const inputs = Object.keys(result.metafile.inputs)
    .filter((f) => !f.includes('node_modules/') && !f.includes(':'))
    .map((f) => relative(dirname(bundle), join(root, f)));
  writeFileSync(`${bundle}.inputs.json`, `${JSON.stringify({ tree: relative(dirname(bundle), join(root, b.entry)), inputs }, null, 1)}\n`);
  const bin = join(root, b.bin);
  let launcher = readFileSync(join(root, 'scripts', 'bundle-launcher.cjs'), 'utf8');
  if (b.fastPath) {
    const out = join(root, b.fastPath.out);
    await build({
      entryPoints: [join(root, b.fastPath.entry)],
      outfile: out,
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      minify: true,
      logLevel: 'warning',
    });
    launcher = launcher.replace("const FAST_PATH = '';", `const FAST_PATH = ${JSON.stringify(relative(dirname(bin), out))};`);
  }
  writeFileSync(bin, b.shebang ? launcher.replace(/^#!.*/, b.shebang) : launcher);
  chmodSync(bin, 0o755);
  rmSync(`${bundle}.cache`, { force: true });
  if (b.warmUp && !(await warmUp(bin, `${bundle}.cache`, b.warmUp))) {
    rmSync(warmDir, { recursive: true, force: true });
    process.exit(1);
  }
  if (b.warmUp?.level !== undefined) {
    // The cache's level (bundle-launcher.cjs: a float64 at byte 24), set below what a real run's
    // would be, so that the first such run replaces it with what it compiled.
    const c = readFileSync(`${bundle}.cache`);
    c.writeDoubleLE(b.warmUp.level, 24);
    writeFileSync(`${bundle}.cache`, c);
  }
}
rmSync(warmDir, { recursive: true, force: true });

// Workspace bins: executable, and linked in node_modules/.bin as npm links them (npm skips a bin
// whose file does not exist yet, and on a fresh clone `npm ci` runs before the build).
const workspaces = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).workspaces;
for (const ws of workspaces) {
  const pkg = JSON.parse(readFileSync(join(root, ws, 'package.json'), 'utf8'));
  for (const [name, bin] of Object.entries(pkg.bin ?? {})) {
    const file = join(root, ws, bin);
    if (!existsSync(file)) continue;
    chmodSync(file, 0o755);
    const link = join(root, 'node_modules', '.bin', name);
    const target = join('..', pkg.name, bin);
    if (!existsSync(link) || readlinkSync(link) !== target) {
      rmSync(link, { force: true });
      mkdirSync(dirname(link), { recursive: true });
      symlinkSync(target, link);
    }
  }
}
