#!/usr/bin/env node
// The bin of a bundled program (copied by scripts/bundle.mjs to <pkg>/dist/<name>.cjs): runs
// <name>.bundle.cjs (the program and everything it imports in one CommonJS file) with V8's code
// cache <name>.bundle.cjs.cache beside it, so a cold process neither resolves modules nor compiles
// the code an earlier run compiled. Node 20 has no module compile cache (module.enableCompileCache
// is 22.1+), so this does the same for the one file with vm.Script's cachedData. CommonJS, not
// ESM: on Node 20 the ESM loader alone costs a cold start about 15 ms.
//
// The cache is keyed by the bundle's build id (`/* fuxi-build <id> */` near its top: a hash of its
// content, written by scripts/bundle.mjs) and size, so it stays valid where the bundle is copied,
// packed and unpacked (tar keeps whole seconds of an mtime); V8 itself checks only the source
// length. A bundle without a build id is keyed by its mtime. The cache
// holds what the writing run had compiled, so each cache has a level, and a run writes one when
// it would reach a higher level than the cache it found (none, or one V8 rejects, such as another
// Node version's, is below all):
//   1    a run up for 0.5 s (a daemon past its start, a CLI command that waits): written then, by
//        the timer, not at 'exit', because an AM is often stopped by a signal at the end of its job;
//   0.5  a shorter run that loaded the network stack (`http2`: a CLI command that called the
//        cluster), written at its exit;
//   0.25 the CLI's build (scripts/bundle.mjs: its warm-up run calls no cluster, so the first
//        command that does writes its own);
//   0    a shorter run that did not load it (`fuxi --help`), written at its exit.
// So the first command after a build or an upgrade cannot leave a cache of what `--help` compiles
// for every later command: a `fuxi cluster status` run with such a cache took 47 ms more than
// with the build's (medians of 30 alternating runs). A failure to write (a read-only
// installation) only means running without one.
//
// A bundle older than one of its sources (<name>.bundle.cjs.inputs.json lists them: this
// repository's compiled files it was built from) is not run: `tsc -b` alone updates the module tree
// but not the bundle, so the module tree runs instead, with a warning, and runs what was compiled.
'use strict';
// The bundles need Node.js 20.19+; checked here, not by a second Node start (lib/fuxi-run of an
// installation checks the version of the programs that are not bundled with `node --version`).
{
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major < 20 || (major === 20 && minor < 19)) {
    const name = require('node:path').basename(__filename, '.cjs');
    process.stderr.write(
      `${name}: ${process.execPath} is Node.js v${process.versions.node}; ${name} needs 20.19 or newer (install it, or set FUXI_NODE to such a node binary)\n`,
    );
    process.exit(127);
  }
}
const { readFileSync, renameSync, rmSync, statSync, writeFileSync } = require('node:fs');
const { createRequire } = require('node:module');
const { basename, dirname, join } = require('node:path');
const { pathToFileURL } = require('node:url');
const { Script, constants } = require('node:vm');

const bundle = __filename.replace(/\.cjs$/, '.bundle.cjs');
/**
 * A module beside this bin whose `run(args, { bundle, bin })` may run the command without the
 * bundle (the CLI's fast path to its server: client/src/cli/fast-path.ts); it resolves to the exit
 * code, or to undefined when the bundle must run. Set by scripts/bundle.mjs; '' for none.
 */
const FAST_PATH = '';
const cacheFile = `${bundle}.cache`;
const HEADER = 32; // the bundle's key (16 bytes), its size and the cache's level (float64s)
const COMPLETE_AFTER_MS = 500;
/** The modules whose loading makes a short run's cache level 0.5 (the bundle requires Node's own modules without `node:`, grpc-js's way, or with it). */
const NETWORK_MODULES = new Set(['http2', 'node:http2']);
const { mtimeMs, size } = statSync(bundle);

/** The module tree's entry, when a source of the bundle is newer than the bundle; else undefined. */
function staleBundle() {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(`${bundle}.inputs.json`, 'utf8'));
  } catch {
    return undefined; // a bundle without its manifest (copied alone): run it
  }
  for (const input of manifest.inputs) {
    let t;
    try {
      t = statSync(join(dirname(bundle), input)).mtimeMs;
    } catch {
      continue; // an installation without that file
    }
    if (t > mtimeMs) {
      process.stderr.write(`${basename(__filename)}: ${input} is newer than ${basename(bundle)} (make build rebuilds it); running the module tree\n`);
      return join(dirname(bundle), manifest.tree);
    }
  }
  return undefined;
}

const tree = staleBundle();
if (tree !== undefined) {
  import(pathToFileURL(tree).href);
} else if (FAST_PATH) {
  let fast;
  try {
    fast = require(join(dirname(__filename), FAST_PATH));
  } catch {
    fast = undefined; // a bin copied without it
  }
  if (fast === undefined) runBundle();
  else
    fast.run(process.argv.slice(2), { bundle, bin: __filename }).then((code) => {
      if (code === undefined) runBundle();
      else process.exitCode = code;
    });
} else {
  runBundle();
}

function runBundle() {
  // The CommonJS module wrapper; the bundle's #! line is blanked (same line numbers in traces).
  const text = readFileSync(bundle, 'utf8');
  const source = `(function (exports, require, module, __filename, __dirname) {${text.replace(/^#!.*/, '')}\n})`;
  const key = (/\/\* fuxi-build ([0-9a-f]{16}) \*\//.exec(text.slice(0, 512))?.[1] ?? `m${mtimeMs}`).padEnd(16).slice(0, 16);
  let cachedData;
  let found = -1; // the level of the cache found; -1 for none
  try {
    const c = readFileSync(cacheFile);
    if (c.length > HEADER && c.toString('latin1', 0, 16) === key && c.readDoubleLE(16) === size) {
      cachedData = c.subarray(HEADER);
      found = c.readDoubleLE(24);
    }
  } catch {
    /* no cache yet */
  }
  const script = new Script(source, { filename: bundle, cachedData, importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER });
  if (script.cachedDataRejected) found = -1;
  let network = false;
  const bundleRequire = createRequire(bundle);
  let req = bundleRequire;
  if (found < 1) {
    let written = false;
    const write = (level) => {
      if (written || level <= found) return;
      written = true;
      const tmp = `${cacheFile}.${process.pid}`;
      try {
        const header = Buffer.alloc(HEADER);
        header.write(key, 0, 16, 'latin1');
        header.writeDoubleLE(size, 16);
        header.writeDoubleLE(level, 24);
        writeFileSync(tmp, Buffer.concat([header, script.createCachedData()]));
        renameSync(tmp, cacheFile); // atomic: a concurrent start reads the old cache or the new one
      } catch {
        rmSync(tmp, { force: true }); // cannot write beside the bundle: run without a cache
      }
    };
    if (found < 0.5) {
      req = Object.assign((id) => {
        if (NETWORK_MODULES.has(id)) network = true;
        return bundleRequire(id);
      }, bundleRequire);
      process.once('exit', () => write(network ? 0.5 : 0));
    }
    setTimeout(() => write(1), COMPLETE_AFTER_MS).unref();
  }
  const mod = { exports: {} };
  script.runInThisContext()(mod.exports, req, mod, bundle, dirname(bundle));
}
