/** Job spec files: read, parse, validate, resolve relative paths. */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve as resolvePath } from 'node:path';
import { InvalidArgumentError, normalizeJobSpec, parseJobSpecText, validateJobSpec, type JobSpec } from '@fuxi/common';

/** Reads a YAML or JSON job file (see `loadSpec`). */
export function loadJobSpecFile(path: string, id?: string): JobSpec {
  return loadSpec(path, id, (p) => readFileSync(p, 'utf8'));
}

/**
 * Reads, parses and validates a job spec file; every problem is an InvalidArgumentError naming the
 * file. Relative task `cwd`s are resolved against the file's folder.
 */
export function loadSpec(file: string, id: string | undefined, readFile: (path: string) => string): JobSpec {
  let text: string;
  try {
    text = readFile(file);
  } catch (e) {
    const reason = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : e instanceof Error ? e.message : String(e);
    throw new InvalidArgumentError('', `cannot read job spec ${file}: ${reason}`);
  }
  const raw = parseJobSpecText(text, file);
  let spec: JobSpec;
  try {
    spec = normalizeJobSpec(raw);
  } catch (e) {
    throw e instanceof InvalidArgumentError ? withFile(e, file) : e;
  }
  // A relative working directory is relative to the job file's folder (like a compose file).
  for (const t of spec.tasks) {
    if (t.command.cwd && !isAbsolute(t.command.cwd)) t.command.cwd = resolvePath(dirname(resolvePath(file)), t.command.cwd);
  }
  if (id === undefined) return spec;
  try {
    return validateJobSpec({ ...spec, jobId: id });
  } catch (e) {
    throw e instanceof InvalidArgumentError && e.field === 'id' ? new InvalidArgumentError('--id', e.reason) : e;
  }
}

function withFile(e: InvalidArgumentError, file: string): InvalidArgumentError {
  // Keep field and reason; say which file in the message.
  const out = new InvalidArgumentError(e.field, e.reason);
  out.message = `${file}: ${e.message}`;
  return out;
}
