#!/usr/bin/env node
/**
 * `fuxi`: the Fuxi command line. See `fuxi --help`; the commands live in `program.ts`.
 */
import { readFileSync } from 'node:fs';
import { installCheapIpv6Test } from './ipv6-test.js';
import { runCli } from './program.js';

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

// No top-level await: scripts/bundle.mjs bundles this file as CommonJS (see start.cts).
void runCli(process.argv.slice(2), {
  // gRPC and the wire contract load only when a command talks to the cluster.
  makeClient: async (masters, transport, auth) => {
    const { FuxiClient } = await import('../sdk/fuxi-client.js');
    return new FuxiClient({
      masters,
      retryForMs: Number(process.env.FUXI_RETRY_MS ?? 15_000),
      ...transport,
      tlsField: '--tls-ca',
      // A command lives for a few calls: its certificates as read now, no file watcher.
      watchCertificates: false,
      ...(auth?.tokenFile ? { tokenFile: auth.tokenFile } : {}),
    });
  },
  stdout: process.stdout,
  stderr: process.stderr,
  readFile: (path) => readFileSync(path, 'utf8'),
  writeRaw,
}).then((code) => {
  process.exitCode = code;
  // gRPC channels can keep the loop alive for a moment after close(); do not wait for them.
  setTimeout(() => process.exit(code), 1000).unref();
});
