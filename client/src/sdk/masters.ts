/** Master addresses: `FUXI_MASTER` and `--master` lists (no gRPC here, so the CLI reads them before it loads a client). */

export const DEFAULT_MASTER = '127.0.0.1:7070';

/** Master addresses from `FUXI_MASTER` (comma-separated), or `127.0.0.1:7070`. */
export function defaultMasters(env: NodeJS.ProcessEnv = process.env): string[] {
  return splitAddresses(env.FUXI_MASTER ?? '') ?? [DEFAULT_MASTER];
}

/** `"a:1, b:2"` -> `['a:1', 'b:2']`; undefined when empty. */
export function splitAddresses(s: string): string[] | undefined {
  const list = s
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '');
  return list.length ? list : undefined;
}
