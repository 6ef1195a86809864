/** Master epochs and other int64 values travel as decimal strings; compare them here. */
export type Int64 = string;

export function cmpInt64(a: Int64 | number, b: Int64 | number): number {
  const x = BigInt(a || 0);
  const y = BigInt(b || 0);
  return x < y ? -1 : x > y ? 1 : 0;
}

export function maxInt64(a: Int64, b: Int64): Int64 {
  return cmpInt64(a, b) >= 0 ? a : b;
}
