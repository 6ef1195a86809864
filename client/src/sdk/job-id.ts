/** Client-side job ids, so that a retried submit is idempotent. */
import { JOB_ID_PATTERN } from '@fuxi/common';

/**
 * A job id from the job name and a random suffix: `wordcount-3f2a9c1b7d4e`. `random` is a hex
 * string (e.g. `crypto.randomUUID()`); the result always matches `JOB_ID_PATTERN`.
 */
export function makeJobId(name: string, random: string): string {
  const suffix =
    random
      .replace(/[^0-9a-f]/gi, '')
      .toLowerCase()
      .slice(0, 12) || '0';
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 40)
    .replace(/[-._]+$/, '');
  const id = slug ? `${slug}-${suffix}` : `job-${suffix}`;
  return JOB_ID_PATTERN.test(id) ? id : `job-${suffix}`;
}
