#!/usr/bin/env node
// After `tsc -b` (`make build`, `npm run bundle`): bundles the `fuxi` CLI into one CommonJS file,
// client/dist/fuxi.cjs, with esbuild, so a cold `fuxi` reads one file instead of resolving and
// loading a few hundred modules; writes its V8 code cache (see client/src/cli/start.cts, the bin
// that runs it); and marks every workspace `bin` executable (npm links them at install time,
// before the build writes them). --metafile also writes what went into the bundle (fuxi.cjs.meta.json).
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
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

/** One CommonJS file for Node 20 (see start.cts for why not ESM). */
async function bundle(entry, outfile, plugins) {
  const result = await build({
    entryPoints: [join(root, entry)],
    outfile: join(root, outfile),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    minify: true,
    // Server-only packages (health, reflection) and what grpc-js loads only for channelz / ORCA:
    // left to Node's resolver from the installation's node_modules, never loaded by the CLI.
    external: ['@grpc/proto-loader', '@grpc/reflection', 'grpc-health-check'],
    plugins,
    logLevel: 'warning',
    metafile: process.argv.includes('--metafile'),
  });
  if (result.metafile) writeFileSync(join(root, `${outfile}.meta.json`), JSON.stringify(result.metafile));
}

await bundle('client/dist/cli/main.js', 'client/dist/fuxi.cjs', [noPino]);

// The code cache: a submit to a master that is not there runs the spec reader, the client, the
// wire encoding and a connection attempt; the launcher writes the cache when the run exits.
const cache = join(root, 'client/dist/fuxi.cjs.cache');
rmSync(cache, { force: true });
const warm = spawnSync(
  process.execPath,
  [join(root, 'client/dist/cli/start.cjs'), 'submit', join(root, 'deploy/examples/wordcount/job.yaml'), '--master', '127.0.0.1:1'],
  { env: { ...process.env, FUXI_RETRY_MS: '0' }, encoding: 'utf8', timeout: 60_000 },
);
if (warm.status !== 4 || !existsSync(cache)) {
  // Exit 4 = master unavailable, as expected; anything else means the bundle is broken.
  console.error(`bundle.mjs: the bundled CLI failed its warm-up run (exit ${warm.status}):\n${warm.stderr}`);
  process.exit(1);
}

const workspaces = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).workspaces;
for (const ws of workspaces) {
  const pkg = JSON.parse(readFileSync(join(root, ws, 'package.json'), 'utf8'));
  for (const bin of Object.values(pkg.bin ?? {})) {
    const file = join(root, ws, bin);
    if (existsSync(file)) chmodSync(file, 0o755);
  }
}
