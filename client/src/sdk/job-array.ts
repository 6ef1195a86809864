/**
 * Job array index specs as Slurm users write them: `0-999`, `1,3,5-9`, `0-100:10` (a step), and a
 * `%N` suffix for at most N members running at once (`0-999%50`).
 *
 * ```ts
 * parseArraySpec('0-9:3%2'); // { indices: [0, 3, 6, 9], maxRunning: 2 }
 * ```
 */
import { InvalidArgumentError, JOB_ID_PATTERN } from '@fuxi/common';

/** At most this many members in one array. */
export const MAX_ARRAY_SIZE = 100_000;
/** The largest index, and the largest %N (the spec's int32 fields). */
export const MAX_ARRAY_NUMBER = 2 ** 31 - 1;

/**
 * Refuses, before any member is submitted, an array whose members could not all be: an array id
 * that is no job id, a member id `<id>_<index>` over the job id's 63 characters, an index or a limit
 * out of range. (A refusal per member would leave the array half-made.)
 */
export function checkArray(arrayId: string, indices: readonly number[], maxRunning: number, field = 'arrayId'): void {
  if (!JOB_ID_PATTERN.test(arrayId)) throw new InvalidArgumentError(field, `must be a job id (${JOB_ID_PATTERN.source}), got ${JSON.stringify(arrayId)}`);
  if (indices.length === 0) throw new InvalidArgumentError('indices', 'makes no members');
  let longest = 0;
  for (const i of indices) {
    if (!Number.isInteger(i) || i < 0 || i > MAX_ARRAY_NUMBER)
      throw new InvalidArgumentError('indices', `an index must be an integer from 0 to ${MAX_ARRAY_NUMBER}, got ${i}`);
    longest = Math.max(longest, String(i).length);
  }
  if (arrayId.length + 1 + longest > 63)
    throw new InvalidArgumentError(
      field,
      `${JSON.stringify(arrayId)} makes member ids of ${arrayId.length + 1 + longest} characters (${arrayId}_<index>); a job id has at most 63`,
    );
  if (!Number.isInteger(maxRunning) || maxRunning < 0 || maxRunning > MAX_ARRAY_NUMBER)
    throw new InvalidArgumentError('maxRunning', `must be an integer from 0 (no limit) to ${MAX_ARRAY_NUMBER}, got ${maxRunning}`);
}

export function parseArraySpec(text: string, field = '--array'): { indices: number[]; maxRunning: number } {
  const m = /^([^%]+)(?:%(\d+))?$/.exec(text.trim());
  if (!m)
    throw new InvalidArgumentError(field, `must look like 0-999, 1,3,5-9 or 0-99:10, with an optional %N (at most N running), got ${JSON.stringify(text)}`);
  const maxRunning = m[2] === undefined ? 0 : Number(m[2]);
  if (m[2] !== undefined && (maxRunning < 1 || maxRunning > MAX_ARRAY_NUMBER))
    throw new InvalidArgumentError(field, `%N must be from 1 to ${MAX_ARRAY_NUMBER}, got %${m[2]}`);
  const seen = new Set<number>();
  for (const part of m[1]!.split(',')) {
    const r = /^(\d+)(?:-(\d+)(?::(\d+))?)?$/.exec(part.trim());
    if (!r) throw new InvalidArgumentError(field, `"${part}" is not an index, a range a-b, or a range with a step a-b:s`);
    const from = Number(r[1]);
    const to = r[2] === undefined ? from : Number(r[2]);
    const step = r[3] === undefined ? 1 : Number(r[3]);
    if (to > MAX_ARRAY_NUMBER) throw new InvalidArgumentError(field, `${part}: an index must be at most ${MAX_ARRAY_NUMBER}`);
    if (to < from) throw new InvalidArgumentError(field, `range ${part} ends before it starts`);
    if (step < 1) throw new InvalidArgumentError(field, `the step of ${part} must be at least 1`);
    if (Math.floor((to - from) / step) + 1 > MAX_ARRAY_SIZE) throw new InvalidArgumentError(field, `makes more than ${MAX_ARRAY_SIZE} members`);
    for (let i = from; i <= to; i += step) {
      seen.add(i);
      if (seen.size > MAX_ARRAY_SIZE) throw new InvalidArgumentError(field, `makes more than ${MAX_ARRAY_SIZE} members`);
    }
  }
  return { indices: [...seen].sort((a, b) => a - b), maxRunning };
}
