/**
 * Where cgroups are on this host, as text: the cgroup mounts of /proc/self/mountinfo, and a group
 * path of /proc/self/cgroup as a directory under its mount. Shared by the enforcer (cgroups.ts) and
 * the spawn helper (direct-launch.ts), so Node's own modules only.
 *
 * ```ts
 * const m = cgroupMounts(fs.readFileSync('/proc/self/mountinfo', 'utf8')).find((x) => x.fstype === 'cgroup2');
 * const dir = dirUnder(m, '/system.slice/fuxi-agent.service'); // /sys/fs/cgroup/system.slice/fuxi-agent.service
 * ```
 */
import * as path from 'node:path';

export interface Mount {
  dir: string;
  /** The mount's root inside the hierarchy (mountinfo field 4). */
  root: string;
  fstype: string;
  options: string[];
}

/** Parses /proc/self/mountinfo into the cgroup and cgroup2 mounts. */
export function cgroupMounts(mountInfo: string): Mount[] {
  const out: Mount[] = [];
  for (const line of mountInfo.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const left = line.slice(0, sep).split(' ');
    const right = line.slice(sep + 3).split(' ');
    const fstype = right[0] ?? '';
    if (fstype !== 'cgroup' && fstype !== 'cgroup2') continue;
    out.push({ dir: unescapeMount(left[4] ?? ''), root: unescapeMount(left[3] ?? '/'), fstype, options: (right[2] ?? '').split(',') });
  }
  return out;
}

function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** `own` (a group path from /proc/self/cgroup) as a directory under `m`. */
export function dirUnder(m: Mount, own: string): string {
  const root = m.root === '/' ? '' : m.root.replace(/\/+$/, '');
  const rel = root && (own === root || own.startsWith(root + '/')) ? own.slice(root.length) : own;
  return path.join(m.dir, rel || '/');
}
