/**
 * host:port addresses as daemons advertise them to peers on other hosts. Pure string logic: which
 * host an address names, and whether that host is a loopback one (reachable only from the same
 * machine, so never an address to give a peer elsewhere on the rack).
 *
 * ```ts
 * hostOf('10.0.0.5:7070');            // '10.0.0.5'
 * isLoopbackHost('127.0.0.1');        // true
 * loopbackAdvertiseProblem('advertise', '127.0.0.1:7071', ['10.0.0.5:7070']);
 * // -> 'advertise: 127.0.0.1:7071 is a loopback address, but peers are on other hosts (10.0.0.5:7070) ...'
 * ```
 */

/** The host part of host:port (brackets of an IPv6 literal removed; a routed address's `#route` ignored). */
export function hostOf(address: string): string {
  const s = address.replace(/#.*$/, '').replace(/^[a-z][a-z0-9+.-]*:\/\//i, ''); // etcd endpoints are URLs
  const i = s.lastIndexOf(':');
  const host = i > 0 && /^\d+\/?$/.test(s.slice(i + 1).replace(/\/.*$/, '')) ? s.slice(0, i) : s.replace(/\/.*$/, '');
  return host.replace(/^\[(.*)\]$/, '$1');
}

/** The port of host:port, or undefined when it has none. */
export function portOf(address: string): number | undefined {
  const m = /:(\d{1,5})$/.exec(address.replace(/#.*$/, ''));
  return m ? Number(m[1]) : undefined;
}

/** 127.0.0.0/8, ::1 and the name localhost. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h) || h === '0:0:0:0:0:0:0:1';
}

/** 0.0.0.0 / :: (bind to every interface; never an address to advertise). */
export function isWildcardHost(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '';
}

/**
 * Why advertising `address` to `peers` cannot work, or undefined when it can: a loopback address
 * while some peer is on another host (that peer would connect to itself).
 */
export function loopbackAdvertiseProblem(key: string, address: string, peers: readonly string[]): string | undefined {
  if (!isLoopbackHost(hostOf(address))) return undefined;
  const remote = peers.filter((p) => !isLoopbackHost(hostOf(p)));
  if (remote.length === 0) return undefined;
  return `${key}: ${address} is a loopback address, but peers are on other hosts (${remote.join(', ')}); they could not reach this daemon. Set ${key} to this host's name or address as the peers see it (host:port)`;
}
