/**
 * The files of a worker's directory, as the agent and its spawn helper (often root) write and read
 * them. The directory is the worker's: while it runs, or after it ran with the same id, it may
 * have put a symlink (to a file or a directory of root's) or a FIFO where one of these files goes.
 * So nothing here follows a symlink, opens a FIFO or a device, or blocks:
 *
 * - `writeFresh` replaces the file whole: what is there is removed, and a new file is created
 *   exclusively (`O_EXCL | O_NOFOLLOW`), so a symlink planted between the two makes it fail
 *   (EEXIST), never write through it.
 * - `readRegular` (`readRegularAsync`, `openRegular`) opens with `O_NOFOLLOW | O_NONBLOCK` and
 *   reads only a regular file (undefined otherwise, or when there is none): a log, a progress
 *   file or an output the agent serves is never another file of the node's.
 * - `ownDir` changes the owner and mode of a directory through a descriptor opened with
 *   `O_DIRECTORY | O_NOFOLLOW`, and `realDir` makes sure a path is a directory of its own, not a
 *   symlink or a file in its place.
 *
 * Node's own modules only: the spawn helper starts fast.
 *
 * ```ts
 * writeFresh(path.join(dir, 'exit'), '0\n');
 * const code = readRegular(path.join(dir, 'exit'));
 * ownDir(dir, uid, gid, 0o700);
 * ```
 */
import * as fs from 'node:fs';

const { O_WRONLY, O_RDONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = fs.constants;

/** The flags every read of a worker's file opens it with: never through a symlink, never blocking on a FIFO. */
const READ_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;

/** Removes what is at `file` (whatever it is; a symlink itself, not its target). */
function clear(file: string): void {
  fs.rmSync(file, { force: true, recursive: true });
}

/** Opens `file` as a new, empty file for writing (whatever was there removed first); its descriptor. */
export function createFresh(file: string, mode = 0o644): number {
  const flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
  try {
    return fs.openSync(file, flags, mode); // the usual case: a new worker's directory, nothing there
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  clear(file);
  return fs.openSync(file, flags, mode);
}

/** Writes `text` as the whole of `file`, a new regular file (whatever was there removed first). */
export function writeFresh(file: string, text: string, mode = 0o644): void {
  const fd = createFresh(file, mode);
  try {
    fs.writeSync(fd, text);
  } finally {
    fs.closeSync(fd);
  }
}

/** The text of `file` when it is a regular file (not through a symlink); undefined otherwise. */
export function readRegular(file: string): string | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, READ_FLAGS);
  } catch {
    return undefined;
  }
  try {
    if (!fs.fstatSync(fd).isFile()) return undefined;
    return fs.readFileSync(fd, 'utf8');
  } catch {
    return undefined;
  } finally {
    fs.closeSync(fd);
  }
}

/** Opens `file` for reading when it is a regular file; rejects otherwise (ENOENT, ELOOP, or not a file). */
export async function openRegular(file: string): Promise<fs.promises.FileHandle> {
  const fh = await fs.promises.open(file, READ_FLAGS);
  try {
    if ((await fh.stat()).isFile()) return fh;
  } catch {
    /* closed below */
  }
  await fh.close();
  throw Object.assign(new Error(`${file} is not a regular file`), { code: 'EINVAL' });
}

/** `readRegular` off the event loop. */
export async function readRegularAsync(file: string): Promise<string | undefined> {
  let fh: fs.promises.FileHandle;
  try {
    fh = await openRegular(file);
  } catch {
    return undefined;
  }
  try {
    return await fh.readFile('utf8');
  } catch {
    return undefined;
  } finally {
    await fh.close();
  }
}

/** Makes `dir` a directory of its own: anything else in its place (a symlink, a file) is removed first. */
export function realDir(dir: string): void {
  let st: fs.Stats | undefined;
  try {
    st = fs.lstatSync(dir);
  } catch {
    st = undefined;
  }
  if (st && !st.isDirectory()) clear(dir);
  fs.mkdirSync(dir, { recursive: true });
}

/** Gives directory `dir` (never a symlink's target) to `uid`:`gid` with `mode`. */
export function ownDir(dir: string, uid: number, gid: number, mode: number): void {
  const fd = fs.openSync(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  try {
    fs.fchownSync(fd, uid, gid);
    fs.fchmodSync(fd, mode);
  } finally {
    fs.closeSync(fd);
  }
}
