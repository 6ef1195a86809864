#!/usr/bin/env node
/**
 * `fuxi`: the Fuxi command line. See `fuxi --help`; the commands live in `program.ts`.
 */
import { readFileSync } from 'node:fs';
import { installCheapIpv6Test } from './ipv6-test.js';
import { runCli, type CliTransport } from './program.js';

// Before gRPC loads: grpc-js tests each address it dials with net.isIPv6 (ipv6-test.ts).
installCheapIpv6Test();

/** Writes to stdout honouring backpressure; a closed pipe (`fuxi logs ... | head`) ends quietly. */
function writeRaw(chunk: Buffer): Promise<void> {
  return new Promise((resolve) => {
    if (process.stdout.write(chunk)) resolve();
    else process.stdout.once('drain', resolve);
  });
}

process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

/** A client as a `fuxi` command makes one (FUXI_RETRY_MS from `env`). */
async function makeClient(masters: string[], transport: CliTransport | undefined, auth: { tokenFile?: string } | undefined, env: NodeJS.ProcessEnv) {
  // gRPC and the wire contract load only when a command talks to the cluster.
  const { FuxiClient } = await import('../sdk/fuxi-client.js');
  return new FuxiClient({
    masters,
    retryForMs: Number(env.FUXI_RETRY_MS ?? 15_000),
    ...transport,
    tlsField: '--tls-ca',
    // A command lives for a few calls: its certificates as read now, no file watcher.
    watchCertificates: false,
    ...(auth?.tokenFile ? { tokenFile: auth.tokenFile } : {}),
  });
}

const args = process.argv.slice(2);
// No top-level await: scripts/bundle.mjs bundles this file as CommonJS.
if (args[0] === 'cli-server') {
  void import('./cli-server.js').then(async ({ CliServer }) => {
    const idleS = Number(process.env.FUXI_CLI_SERVER_IDLE_S ?? 600);
    // A command runs with its caller's FUXI_* variables alone, never with those of the caller
    // that happened to start the server (the SDK falls back to the process's for TLS).
    for (const k of Object.keys(process.env)) if (k.startsWith('FUXI_')) delete process.env[k];
    const bundle = bundleFile();
    const server = new CliServer({
      makeClient,
      // Run from the bundle (the bin), the callers' build id must be the bundle's.
      ...(bundle ? { bundle } : {}),
      idleMs: (Number.isFinite(idleS) && idleS > 0 ? idleS : 600) * 1000,
      log: (s) => process.stderr.write(`${s}\n`),
    });
    for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => void server.stop(sig));
    if (!(await server.start())) process.exit(0); // another server listens already
    await server.done;
    process.exit(0);
  });
} else {
  void runCli(args, {
    makeClient: (masters, transport, auth) => makeClient(masters, transport, auth, process.env),
    stdout: process.stdout,
    stderr: process.stderr,
    readFile: (path) => readFileSync(path, 'utf8'),
    writeRaw,
  }).then((code) => {
    process.exitCode = code;
    // gRPC channels can keep the loop alive for a moment after close(); do not wait for them.
    setTimeout(() => process.exit(code), 1000).unref();
  });
}

/** The bundle this code runs from (client/dist/fuxi.bundle.cjs), or undefined in the module tree. */
function bundleFile(): string | undefined {
  return typeof __filename === 'string' && __filename.endsWith('.bundle.cjs') ? __filename : undefined;
}
