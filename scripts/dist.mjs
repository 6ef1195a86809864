#!/usr/bin/env node
// `make dist`: a self-contained tarball of this build, dist/fuxi-<version>-linux.tar.gz, that runs
// with the target host's Node.js 20.19 or newer. Run after `make build` (the Makefile does).
//
// Its one directory, fuxi-<version>/, is what install.sh copies to /opt/fuxi:
//   <workspace>/package.json, <workspace>/dist/  the compiled code of each runtime workspace (proto,
//                                               packages/*, master, agent, appmaster, client, deploy;
//                                               not test), tests left out; the same layout as the
//                                               repository, so the programs find one another
//   proto/fuxi/v1/*.proto                       the wire contract (the code loads the compiled
//                                               descriptors; these are for other clients)
//   master/static/dashboard.html                the master's web dashboard page
//   node_modules/                               production dependencies only: `npm ci --omit=dev`
//                                               against the repository's lock file
//   bin/fuxi, bin/fuxi-master, bin/fuxi-agent,  the programs, each run by lib/fuxi-run with the
//   bin/fuxi-appmaster, bin/fuxi-amhost,        host's `node` (FUXI_NODE, else the one on PATH),
//   bin/fuxi-local-cluster                      which refuses a Node.js older than 20.19
//   deploy/systemd/*.service                    the units install.sh installs
//   deploy/config/                              example configs (cluster/: /etc/fuxi/*.yaml)
//   deploy/examples/                            the word count
//   install.sh                                  creates the fuxi user and the state and config
//                                               directories, copies to /opt/fuxi; idempotent
//
// Options: --out DIR (default dist), --stage-only (no tarball: leaves DIR/fuxi-<version>/),
// --offline (npm ci from the npm cache only).
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const outDir = path.resolve(repo, opt('--out') ?? 'dist');
const rootPkg = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8'));
const version = rootPkg.version;
const name = `fuxi-${version}`;
const stage = path.join(outDir, name);
const tarball = path.join(outDir, `${name}-linux.tar.gz`);

/** Workspaces that run on a host; `test` (suites, benchmarks) stays in the repository. */
const RUNTIME = rootPkg.workspaces.filter((w) => w !== 'test');
/** The installed programs: bin name -> file, relative to the installation. */
const PROGRAMS = {
  fuxi: 'client/dist/fuxi.cjs',
  'fuxi-master': 'master/dist/shell/main.js',
  'fuxi-agent': 'agent/dist/shell/main.js',
  'fuxi-appmaster': 'appmaster/dist/fuxi-appmaster.cjs',
  'fuxi-amhost': 'appmaster/dist/fuxi-amhost.cjs',
  'fuxi-local-cluster': 'deploy/dist/local-cluster-main.js',
};

const t0 = Date.now();
for (const file of Object.values(PROGRAMS)) {
  if (!fs.existsSync(path.join(repo, file))) throw new Error(`${file} is missing: run \`make build\` first`);
}
fs.rmSync(stage, { recursive: true, force: true });
fs.mkdirSync(stage, { recursive: true });

// Compiled code (mtimes kept: a bundle's launcher compares them with its inputs').
const skip = (src) => /(^|\/)__tests__(\/|$)/.test(src) || src.endsWith('.tsbuildinfo');
for (const ws of RUNTIME) {
  fs.mkdirSync(path.join(stage, ws), { recursive: true });
  fs.copyFileSync(path.join(repo, ws, 'package.json'), path.join(stage, ws, 'package.json'));
  fs.cpSync(path.join(repo, ws, 'dist'), path.join(stage, ws, 'dist'), {
    recursive: true,
    preserveTimestamps: true,
    filter: (src) => !skip(path.relative(repo, src)),
  });
}
fs.cpSync(path.join(repo, 'proto', 'fuxi'), path.join(stage, 'proto', 'fuxi'), { recursive: true });
// The master's dashboard page (master/src/shell/dashboard.ts reads it beside its dist).
fs.cpSync(path.join(repo, 'master', 'static'), path.join(stage, 'master', 'static'), { recursive: true });
for (const d of ['systemd', 'config', 'examples']) fs.cpSync(path.join(repo, 'deploy', d), path.join(stage, 'deploy', d), { recursive: true });
fs.copyFileSync(path.join(repo, 'README.md'), path.join(stage, 'README.md'));
fs.copyFileSync(path.join(repo, 'deploy', 'install.sh'), path.join(stage, 'install.sh'));
fs.chmodSync(path.join(stage, 'install.sh'), 0o755);

// Production dependencies, exactly as locked. The lock names the test workspace too: its
// package.json alone keeps the lock in step with the workspaces (it has no dependency of its own
// beyond the others).
fs.mkdirSync(path.join(stage, 'test'));
fs.copyFileSync(path.join(repo, 'test', 'package.json'), path.join(stage, 'test', 'package.json'));
const pkg = { ...rootPkg };
delete pkg.scripts;
fs.writeFileSync(path.join(stage, 'package.json'), JSON.stringify(pkg, null, 2) + '\n');
fs.copyFileSync(path.join(repo, 'package-lock.json'), path.join(stage, 'package-lock.json'));
const npmArgs = ['ci', '--omit=dev', '--no-audit', '--no-fund', '--loglevel=error', args.includes('--offline') ? '--offline' : '--prefer-offline'];
execFileSync('npm', npmArgs, { cwd: stage, stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, npm_config_update_notifier: 'false' } });
fs.rmSync(path.join(stage, 'test'), { recursive: true, force: true });
fs.rmSync(path.join(stage, 'node_modules', '@fuxi', 'test'), { force: true });
fs.rmSync(path.join(stage, 'node_modules', '.package-lock.json'), { force: true });

// The programs.
fs.mkdirSync(path.join(stage, 'lib'));
fs.copyFileSync(path.join(repo, 'deploy', 'fuxi-run.sh'), path.join(stage, 'lib', 'fuxi-run'));
fs.chmodSync(path.join(stage, 'lib', 'fuxi-run'), 0o755);
fs.mkdirSync(path.join(stage, 'bin'));
for (const [bin, file] of Object.entries(PROGRAMS)) {
  const text = `#!/bin/sh\n# ${bin}: ${file} of this installation, run by the host's Node.js (lib/fuxi-run).\np=$(readlink -f "$0")\nexec "\${p%/bin/*}/lib/fuxi-run" ${bin} ${file} "$@"\n`;
  fs.writeFileSync(path.join(stage, 'bin', bin), text, { mode: 0o755 });
}
fs.writeFileSync(path.join(stage, 'VERSION'), `${version}\n`);

if (!args.includes('--stage-only')) {
  fs.rmSync(tarball, { force: true });
  execFileSync('tar', ['-czf', tarball, '--owner=0', '--group=0', '-C', outDir, name], { stdio: 'inherit' });
  fs.rmSync(stage, { recursive: true, force: true });
}
const what = args.includes('--stage-only') ? stage : tarball;
const size = args.includes('--stage-only') ? '' : ` (${(fs.statSync(tarball).size / 1024 / 1024).toFixed(1)} MiB)`;
process.stdout.write(`${path.relative(process.cwd(), what) || what}${size} in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
