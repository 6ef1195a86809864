/**
 * Testbeds: named sets of hosts reserved for one quota group, optionally for a time window. The
 * master holds them as a `ReadonlyMap<string, Testbed>` by name; these functions answer which
 * testbed a host belongs to now and which hosts a testbed has now.
 */

export interface TestbedSelector {
  hosts?: string[];
  label?: string;
  count?: number;
}

export interface Testbed {
  name: string;
  /** The quota group whose jobs may run there. */
  group: string;
  selector: TestbedSelector;
  /** Node ids. */
  hosts: string[];
  startMs?: number;
  endMs?: number;
  createdMs: number;
}

/** The testbed `nodeId` belongs to at `nowMs` (inside its window), if any. */
export function activeTestbedOf(testbeds: ReadonlyMap<string, Testbed>, nodeId: string, nowMs: number): Testbed | undefined {
  for (const t of testbeds.values()) {
    if ((t.startMs === undefined || t.startMs <= nowMs) && (t.endMs === undefined || nowMs < t.endMs) && t.hosts.includes(nodeId)) return t;
  }
  return undefined;
}

/** The hosts of testbed `name` at `nowMs`; none when it does not exist or is outside its window. */
export function testbedHosts(testbeds: ReadonlyMap<string, Testbed>, name: string, nowMs: number): string[] {
  const t = testbeds.get(name);
  if (t === undefined || (t.startMs !== undefined && nowMs < t.startMs) || (t.endMs !== undefined && nowMs >= t.endMs)) return [];
  return [...t.hosts];
}
