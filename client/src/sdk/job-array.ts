/**
 * Job array index specs as Slurm users write them: `0-999`, `1,3,5-9`, `0-100:10` (a step), and a
 * `%N` suffix for at most N members running at once (`0-999%50`).
 *
 * ```ts
 * parseArraySpec('0-9:3%2'); // { indices: [0, 3, 6, 9], maxRunning: 2 }
 * ```
 */
import { InvalidArgumentError } from '@fuxi/common';

/** At most this many members in one array. */
export const MAX_ARRAY_SIZE = 100_000;

export function parseArraySpec(text: string, field = '--array'): { indices: number[]; maxRunning: number } {
  const m = /^([^%]+)(?:%(\d+))?$/.exec(text.trim());
  if (!m)
    throw new InvalidArgumentError(field, `must look like 0-999, 1,3,5-9 or 0-99:10, with an optional %N (at most N running), got ${JSON.stringify(text)}`);
  const maxRunning = m[2] === undefined ? 0 : Number(m[2]);
  if (m[2] !== undefined && maxRunning < 1) throw new InvalidArgumentError(field, `%N must be at least 1, got %${m[2]}`);
  const seen = new Set<number>();
  for (const part of m[1]!.split(',')) {
    const r = /^(\d+)(?:-(\d+)(?::(\d+))?)?$/.exec(part.trim());
    if (!r) throw new InvalidArgumentError(field, `"${part}" is not an index, a range a-b, or a range with a step a-b:s`);
    const from = Number(r[1]);
    const to = r[2] === undefined ? from : Number(r[2]);
    const step = r[3] === undefined ? 1 : Number(r[3]);
    if (to < from) throw new InvalidArgumentError(field, `range ${part} ends before it starts`);
    if (step < 1) throw new InvalidArgumentError(field, `the step of ${part} must be at least 1`);
    for (let i = from; i <= to; i += step) {
      seen.add(i);
      if (seen.size > MAX_ARRAY_SIZE) throw new InvalidArgumentError(field, `makes more than ${MAX_ARRAY_SIZE} members`);
    }
  }
  return { indices: [...seen].sort((a, b) => a - b), maxRunning };
}
