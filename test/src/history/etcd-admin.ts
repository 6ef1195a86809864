/**
 * The few etcd calls the nemesis makes outside the masters' key prefix, over etcd's JSON gateway
 * (`/v3/...` on the client port; node:http, no keep-alive): put and delete keys, compact, defragment
 * a member, list and disarm alarms, and a member's status (its id, the raft leader's, the database
 * size). int64 fields come back as decimal strings; keys and values travel base64-encoded.
 *
 * ```ts
 * const st = await etcdStatus('http://10.214.0.31:2379');
 * await etcdPut(endpoint, '/history-fill/1', Buffer.alloc(1 << 18));
 * ```
 */
import { request } from 'node:http';

/** An etcd error answered by the gateway (e.g. "etcdserver: mvcc: database space exceeded"). */
export class EtcdCallError extends Error {}

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

/** POSTs `body` as JSON to `endpoint + path`; the parsed answer, or EtcdCallError. */
export function etcdCall<T = Record<string, unknown>>(endpoint: string, path: string, body: unknown, timeoutMs = 10_000): Promise<T> {
  const data = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request(
      `${endpoint}${path}`,
      { method: 'POST', agent: false, timeout: timeoutMs, headers: { 'content-type': 'application/json', 'content-length': data.length, connection: 'close' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) => reject(new EtcdCallError(`${path}: ${e.message}`)));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: Record<string, unknown>;
          try {
            parsed = JSON.parse(text) as Record<string, unknown>;
          } catch {
            reject(new EtcdCallError(`${path}: HTTP ${res.statusCode}: ${text.slice(0, 200)}`));
            return;
          }
          if ((res.statusCode ?? 500) >= 300 || typeof parsed.error === 'string') {
            reject(new EtcdCallError(`${path}: ${String(parsed.error ?? parsed.message ?? `HTTP ${res.statusCode}`)}`));
          } else resolve(parsed as T);
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (e) => reject(new EtcdCallError(`${path}: ${e.message}`)));
    req.end(data);
  });
}

/** The end of the key range of every key starting with `prefix`. */
function rangeEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix);
  end[end.length - 1]! += 1;
  return end;
}

export async function etcdPut(endpoint: string, key: string, value: Buffer): Promise<void> {
  await etcdCall(endpoint, '/v3/kv/put', { key: b64(key), value: value.toString('base64') }, 30_000);
}

/** Deletes every key under `prefix`; returns the revision after it. */
export async function etcdDeletePrefix(endpoint: string, prefix: string): Promise<string> {
  const res = await etcdCall<{ header?: { revision?: string } }>(
    endpoint,
    '/v3/kv/deleterange',
    { key: b64(prefix), range_end: b64(rangeEnd(prefix)) },
    30_000,
  );
  return res.header?.revision ?? '0';
}

/** Compacts the key history up to `revision` (physically: waits until it is applied). */
export async function etcdCompact(endpoint: string, revision: string): Promise<void> {
  await etcdCall(endpoint, '/v3/kv/compaction', { revision, physical: true }, 60_000);
}

/** Defragments the member serving `endpoint` (gives freed space back). */
export async function etcdDefragment(endpoint: string): Promise<void> {
  await etcdCall(endpoint, '/v3/maintenance/defragment', {}, 60_000);
}

export interface EtcdAlarm {
  memberID: string;
  alarm: string;
}

export async function etcdAlarms(endpoint: string): Promise<EtcdAlarm[]> {
  const res = await etcdCall<{ alarms?: EtcdAlarm[] }>(endpoint, '/v3/maintenance/alarm', { action: 'GET' });
  return res.alarms ?? [];
}

/** Disarms every alarm (like `etcdctl alarm disarm`). */
export async function etcdDisarmAll(endpoint: string): Promise<void> {
  for (const a of await etcdAlarms(endpoint)) {
    await etcdCall(endpoint, '/v3/maintenance/alarm', { action: 'DEACTIVATE', memberID: a.memberID, alarm: a.alarm });
  }
}

export interface EtcdMemberStatus {
  memberId: string;
  leader: string;
  dbSize: number;
  revision: string;
}

export async function etcdStatus(endpoint: string, timeoutMs = 3000): Promise<EtcdMemberStatus> {
  const res = await etcdCall<{ header?: { member_id?: string; revision?: string }; leader?: string; dbSize?: string }>(
    endpoint,
    '/v3/maintenance/status',
    {},
    timeoutMs,
  );
  return { memberId: res.header?.member_id ?? '', leader: res.leader ?? '', dbSize: Number(res.dbSize ?? 0), revision: res.header?.revision ?? '0' };
}
