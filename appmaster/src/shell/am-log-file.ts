/**
 * A hosted AM's log file (`<worker dir>/stdout`, as a dedicated AM's stdout would be): the
 * destination of its pino logger, on the loop every hosted AM of the host shares.
 *
 * A one-task job's AM logs about ten lines and lives for a few tens of milliseconds, so the lines
 * are handed to the file in batches: at most `LOG_FLUSH_MS` after the first one waiting, once
 * `LOG_FLUSH_CHARS` wait, and at its end; most AMs write once. The file is opened at the first
 * batch (with its directory made then only when it is missing: the agent makes it before the
 * start), each batch is one `fs.write` and the end one `fs.close`, all in libuv's pool, one at a
 * time and in order, with none of a `fs.WriteStream`'s construction, buffering, destruction and
 * close events per AM. Nothing here writes on the loop or fsyncs, except at the process's
 * exit, where the lines still waiting are appended synchronously; only a host killed outright
 * loses its AMs' last `LOG_FLUSH_MS` of lines.
 *
 * ```ts
 * const file = new AmLogFile(path.join(dir, 'stdout'));
 * const log = pino({ name: 'appmaster' }, file);
 * file.close(() => reportEnd()); // once every line is in the file, or after LOG_CLOSE_WAIT_MS
 * ```
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** How long an ending AM's log may take to reach its file before the end is reported anyway. */
export const LOG_CLOSE_WAIT_MS = 1000;
/** A hosted AM's log lines are written together: at most this long after the first one waiting... */
export const LOG_FLUSH_MS = 200;
/** ...or once this many characters wait. */
export const LOG_FLUSH_CHARS = 16_384;

export class AmLogFile {
  /** Files with lines waiting (appended synchronously at the process's exit). */
  private static readonly waiting = new Set<AmLogFile>();
  private static exitHook = false;
  private parts: string[] = [];
  private chars = 0;
  private timer: NodeJS.Timeout | undefined;
  private fd: number | undefined;
  /** An open or a write is in the pool. */
  private busy = false;
  /** The file cannot be written: later lines are dropped. */
  private failed = false;
  private closing: (() => void) | undefined;
  private closed = false;

  constructor(readonly file: string) {}

  /** pino's destination interface. */
  write(line: string): void {
    if (this.closed || this.failed) return;
    if (this.parts.length === 0) AmLogFile.waiting.add(this);
    if (!AmLogFile.exitHook) {
      AmLogFile.exitHook = true;
      process.once('exit', () => {
        for (const f of AmLogFile.waiting) f.flushSync();
      });
    }
    this.parts.push(line);
    this.chars += line.length;
    if (this.chars >= LOG_FLUSH_CHARS) this.flush();
    else if (!this.timer && !this.closing) {
      this.timer = setTimeout(() => this.flush(), LOG_FLUSH_MS);
      this.timer.unref();
    }
  }

  /** Hands the waiting lines to the file now. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.pump();
  }

  /**
   * Writes what waits, closes the file and calls `then` once every line is in it, or after
   * `waitMs` when the disk does not answer (the file is closed whenever the pool gets to it).
   */
  close(then: () => void, waitMs = LOG_CLOSE_WAIT_MS): void {
    if (this.closing || this.closed) {
      then();
      return;
    }
    let called = false;
    const once = () => {
      if (called) return;
      called = true;
      clearTimeout(timer);
      then();
    };
    const timer = setTimeout(once, waitMs);
    this.closing = once;
    this.flush();
  }

  private pump(): void {
    if (this.busy) return;
    if (this.parts.length === 0 || this.failed) {
      if (this.closing) this.finish();
      return;
    }
    if (this.fd === undefined) {
      this.busy = true;
      this.open((fd) => {
        this.busy = false;
        if (fd === undefined) this.fail();
        else this.fd = fd;
        this.pump();
      });
      return;
    }
    const data = this.parts.join('');
    this.parts = [];
    this.chars = 0;
    AmLogFile.waiting.delete(this);
    this.busy = true;
    fs.write(this.fd, data, null, 'utf8', (err) => {
      this.busy = false;
      if (err) this.fail();
      this.pump();
    });
  }

  /** Opens the file for appending, making its directory first when it is missing. */
  private open(cb: (fd: number | undefined) => void): void {
    fs.open(this.file, 'a', (err, fd) => {
      if (!err) return cb(fd);
      if (err.code !== 'ENOENT') return cb(undefined);
      fs.mkdir(path.dirname(this.file), { recursive: true }, (mkErr) => {
        if (mkErr) return cb(undefined);
        fs.open(this.file, 'a', (again, fd2) => cb(again ? undefined : fd2));
      });
    });
  }

  /** A log that cannot be written must not end the host: its lines are dropped. */
  private fail(): void {
    this.failed = true;
    this.parts = [];
    this.chars = 0;
    AmLogFile.waiting.delete(this);
  }

  private finish(): void {
    const then = this.closing;
    this.closing = undefined;
    this.closed = true;
    AmLogFile.waiting.delete(this);
    const fd = this.fd;
    this.fd = undefined;
    if (fd === undefined) setImmediate(() => then?.());
    else fs.close(fd, () => then?.());
  }

  private flushSync(): void {
    try {
      fs.appendFileSync(this.file, this.parts.join(''));
    } catch {
      /* the process is ending; nothing left to tell */
    }
    this.parts = [];
  }
}
