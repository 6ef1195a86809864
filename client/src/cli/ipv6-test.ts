/**
 * A `net.isIPv6` that answers false at once for a string with no `:`, which no IPv6 address
 * lacks, and asks Node's own test otherwise: the same answer for every input.
 *
 * Node's test is one large regular expression, compiled on its first use and interpreted until
 * V8 tiers it up: in a cold process its first call took 6 ms here and each next one about 2 ms.
 * grpc-js calls it on every address it connects to, several times per connection, so a `fuxi`
 * command (a cold process that dials one IPv4 master) spent about 8 ms of its start in it. The
 * CLI installs this in its own process before it loads grpc-js (which looks the function up on the
 * `net` module at each call); daemons and SDK users are not touched.
 *
 * ```ts
 * installCheapIpv6Test();
 * ```
 */
import net from 'node:net';

let installed = false;

export function installCheapIpv6Test(): void {
  if (installed) return;
  installed = true;
  const full = net.isIPv6;
  net.isIPv6 = (input: string): boolean => String(input).includes(':') && full(input);
}
