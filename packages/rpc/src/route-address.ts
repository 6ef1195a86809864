/** Routed addresses (`host:port#route`, routing.ts): how an instance on a server of many is named. */

/** The metadata key carrying the route of a call. */
export const ROUTE_HEADER = 'fuxi-route';

/** `host:port#route`; a route is printable ASCII without spaces or `#` (encode it when it may not be). */
export function routedAddress(address: string, route: string): string {
  if (!/^[\x21-\x7e]+$/.test(route) || route.includes('#'))
    throw new Error(`route must be printable ASCII without spaces or '#', got ${JSON.stringify(route)}`);
  return `${address}#${route}`;
}

/** The `host:port` to dial and the route of an address (`route` undefined: a server of its own). */
export function splitRoute(address: string): { target: string; route: string | undefined } {
  const i = address.indexOf('#');
  return i < 0 ? { target: address, route: undefined } : { target: address.slice(0, i), route: address.slice(i + 1) };
}
