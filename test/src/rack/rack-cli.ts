#!/usr/bin/env node
/**
 * The rack by hand: build it, cut and slow links, run commands on its hosts, tear it down. The
 * hosts are those of the README's example rack (etcd 10.213.0.10, m1-m3 .11-.13, a1-a3 .21-.23)
 * unless `--hosts` says otherwise; what was built is remembered in /run/fuxi-rack-<prefix>.json so
 * that later calls (cut, heal, ...) find it.
 *
 *   node test/dist/rack/rack-cli.js up [--hosts etcd:10,m1:11,a1:21] [--prefix fxr] [--subnet 10.213.0]
 *   node test/dist/rack/rack-cli.js exec m1 node master/dist/shell/main.js --config deploy/config/cluster/master.yaml \
 *     --tls-ca pki/ca.crt --tls-cert pki/master.crt --tls-key pki/master.key   # from `fuxi certs` (or --insecure)
 *   node test/dist/rack/rack-cli.js cut a1 a2 | heal a1 a2 | isolate a1 | heal-all [a1] | slow a1 1mbit | unslow a1
 *   node test/dist/rack/rack-cli.js down
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { Rack, type RackOptions } from './rack.js';
import { RACK_HOSTS, RACK_PREFIX, RACK_SUBNET } from './rack-cluster.js';

const USAGE = `usage: rack-cli.js <command> [options]
  up [--hosts name:octet,...] [--prefix P] [--subnet A.B.C]   build the rack (default: the README's example rack)
  down                                                          remove everything (processes inside included)
  exec HOST CMD [ARGS...]                                       run a command on a host (stdio inherited)
  cut A B | heal A B                                            drop / restore traffic between two hosts
  isolate A | heal-all [A]                                      drop all traffic of A / remove every rule
  slow A RATE | unslow A                                        token bucket on A's link (e.g. 1mbit)
  list                                                          hosts and addresses`;

const stateFile = (prefix: string) => `/run/fuxi-rack-${prefix}.json`;

function saved(prefix: string): RackOptions {
  try {
    return JSON.parse(readFileSync(stateFile(prefix), 'utf8')) as RackOptions;
  } catch {
    throw new Error(`no rack with prefix ${prefix} is up (run "up" first)`);
  }
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    strict: false,
    options: { hosts: { type: 'string' }, prefix: { type: 'string' }, subnet: { type: 'string' }, help: { type: 'boolean' } },
  });
  const [cmd, ...args] = positionals;
  if (!cmd || values.help) {
    process.stdout.write(`${USAGE}\n`);
    return cmd || values.help ? 0 : 2;
  }
  const prefix = typeof values.prefix === 'string' ? values.prefix : RACK_PREFIX;
  if (cmd === 'up') {
    const hosts =
      typeof values.hosts === 'string'
        ? values.hosts.split(',').map((h) => {
            const [name, octet] = h.split(':');
            return { name: name ?? '', octet: Number(octet) };
          })
        : RACK_HOSTS;
    const opts: RackOptions = { prefix, subnet: typeof values.subnet === 'string' ? values.subnet : RACK_SUBNET, hosts };
    const rack = await Rack.create(opts);
    writeFileSync(stateFile(prefix), JSON.stringify(opts));
    // Keep what was built when this process exits: a later "down" removes it.
    rack.release();
    for (const h of rack.hosts) process.stdout.write(`${h.name.padEnd(6)} ${h.ip.padEnd(15)} ${h.netns}\n`);
    process.stdout.write(`client ${rack.bridgeIp} (this machine)\n`);
    return 0;
  }
  if (cmd === 'down') {
    await Rack.sweep(prefix);
    rmSync(stateFile(prefix), { force: true });
    return 0;
  }
  const rack = Rack.attach(saved(prefix));
  const need = (n: number) => {
    if (args.length < n) throw new Error(`${cmd}: needs ${n} argument(s)\n${USAGE}`);
  };
  switch (cmd) {
    case 'list':
      for (const h of rack.hosts) process.stdout.write(`${h.name.padEnd(6)} ${h.ip.padEnd(15)} ${h.netns}\n`);
      return 0;
    case 'exec': {
      need(2);
      const argv = [...rack.wrap(args[0]!), ...args.slice(1)];
      return spawnSync(argv[0]!, argv.slice(1), { stdio: 'inherit' }).status ?? 1;
    }
    case 'cut':
      need(2);
      await rack.cut(args[0]!, args[1]!);
      return 0;
    case 'heal':
      need(2);
      await rack.heal(args[0]!, args[1]!);
      return 0;
    case 'isolate':
      need(1);
      await rack.isolate(args[0]!);
      return 0;
    case 'heal-all':
      await rack.healAll(args[0]);
      return 0;
    case 'slow':
      need(2);
      await rack.slow(args[0]!, args[1]!);
      return 0;
    case 'unslow':
      need(1);
      await rack.unslow(args[0]!);
      return 0;
    default:
      process.stderr.write(`unknown command ${JSON.stringify(cmd)}\n${USAGE}\n`);
      return 2;
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`rack-cli: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
