/**
 * A gate for rack tests: the word count with its maps held until a TCP port on the test process's
 * bridge address opens (`bash`'s /dev/tcp: a release that crosses the network, like everything
 * else on the rack), and the listener that opens it.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import type { JobSpec } from '@fuxi/client';
import { smallWordcountSpec } from '@fuxi/deploy';

/** The 12-map word count whose maps wait until `ip:port` accepts a connection. */
export function gatedWordCount(name: string, ip: string, port: number): JobSpec {
  const gate = `until (exec 3<>/dev/tcp/${ip}/${port}) 2>/dev/null; do sleep 0.2; done; exec node map.mjs "$1" "$2"`;
  return smallWordcountSpec(name, ['bash', '-c', gate, 'map']);
}

/** Opens the gate: a listener on `ip:port` that the gated workers can connect to (close it after). */
export function openGate(ip: string, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer((s) => s.destroy());
    srv.once('error', reject);
    srv.listen(port, ip, () => resolve(srv));
  });
}

/**
 * The first of a run of gate ports below the kernel's ephemeral range: a port inside it may be
 * the source port of one of the test process's own connections on the bridge address, and a
 * listener there fails with EADDRINUSE. `offset` keeps the suites' runs apart.
 */
export function gatePortBase(offset: number): number {
  let low = 32_768;
  try {
    low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || low;
  } catch {
    // no procfs: Linux's default range
  }
  return Math.max(1_024, low - 4_000) + offset;
}
