// The shuffle example's data: partition P of map M is SHUFFLE_PARTITION_BYTES pseudo-random bytes
// seeded by (M, P), so a reducer can check every byte it fetched against what the map must have
// written without any file shared between hosts.

/** The bytes of partition `p` of map `m` (xorshift32 seeded by m and p). */
export function partition(m, p, size) {
  const buf = Buffer.alloc(size);
  let x = (Math.imul(m + 1, 0x9e3779b1) ^ Math.imul(p + 1, 0x85ebca6b)) >>> 0 || 1;
  for (let i = 0; i < size; i += 4) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    buf.writeUInt32LE(x, i);
  }
  return buf;
}

/** FNV-1a over a buffer, as 8 hex digits. */
export function digest(buf) {
  let h = 0x811c9dc5;
  for (let i = 0; i < buf.length; i++) h = Math.imul(h ^ buf[i], 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

export function partitionBytes() {
  const n = Number(process.env.SHUFFLE_PARTITION_BYTES ?? 262144);
  if (!Number.isInteger(n) || n <= 0 || n % 4 !== 0)
    throw new Error(`SHUFFLE_PARTITION_BYTES: must be a positive multiple of 4, got ${process.env.SHUFFLE_PARTITION_BYTES}`);
  return n;
}
