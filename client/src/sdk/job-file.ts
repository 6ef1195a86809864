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
 * file. Relative task `cwd`s are resolved against the file's folder (a relative `file` is in `cwd`).
 */
export function loadSpec(file: string, id: string | undefined, readFile: (path: string) => string, cwd = process.cwd()): JobSpec {
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
    if (t.command.cwd && !isAbsolute(t.command.cwd)) t.command.cwd = resolvePath(dirname(resolvePath(cwd, file)), t.command.cwd);
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

/**
 * A file of many jobs, one JSON job spec (the job file's fields) per line (JSON Lines; blank lines
 * and lines starting with `#` are skipped). Every line is checked before anything is submitted: a
 * bad one is an error naming the file, the line, the field and the reason.
 */
export function loadSpecLines(file: string, readFile: (path: string) => string): JobSpec[] {
  return loadNumberedSpecLines(file, readFile).map((l) => l.spec);
}

/** `loadSpecLines`, each spec with its line number in the file (1-based). */
export function loadNumberedSpecLines(file: string, readFile: (path: string) => string): Array<{ spec: JobSpec; line: number }> {
  let text: string;
  try {
    text = readFile(file);
  } catch (e) {
    const reason = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : e instanceof Error ? e.message : String(e);
    throw new InvalidArgumentError('', `cannot read job specs ${file}: ${reason}`);
  }
  const specs: Array<{ spec: JobSpec; line: number }> = [];
  /** Line of each job id given, so that a second use names both lines before anything is sent. */
  const idLine = new Map<string, string>();
  text.split('\n').forEach((line, i) => {
    const t = line.trim();
    if (t === '' || t.startsWith('#')) return;
    const where = `${file}:${i + 1}`;
    let raw: unknown;
    try {
      raw = JSON.parse(t);
    } catch (e) {
      throw new InvalidArgumentError('', `${where}: not a JSON object (${e instanceof Error ? e.message : String(e)})`);
    }
    try {
      const spec = validateJobSpec(normalizeJobSpec(raw));
      if (spec.jobId) {
        const earlier = idLine.get(spec.jobId);
        if (earlier) throw new InvalidArgumentError('id', `${JSON.stringify(spec.jobId)} is the id of the job at ${earlier} too`);
        idLine.set(spec.jobId, where);
      }
      specs.push({ spec, line: i + 1 });
    } catch (e) {
      throw e instanceof InvalidArgumentError ? withFile(e, where) : e;
    }
  });
  if (specs.length === 0) throw new InvalidArgumentError('', `${file}: no job specs (one JSON object per line)`);
  return specs;
}
