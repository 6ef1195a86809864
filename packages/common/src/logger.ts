/**
 * Logging. Cores take an injected `Logger` (this interface only); shells back it with pino child
 * loggers made by `createLogger`.
 */
import { pino } from 'pino';

export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

export interface LoggerOptions {
  level?: string;
  /** Write to this file descriptor or path instead of stdout. */
  destination?: string | number;
}

/** A pino logger for a daemon; `name` is the component (master, agent, appmaster, cli). */
export function createLogger(name: string, opts: LoggerOptions = {}): Logger {
  const level = opts.level ?? process.env.FUXI_LOG_LEVEL ?? 'info';
  const dest = pino.destination({ dest: opts.destination ?? 1, sync: false });
  return pino({ name, level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, dest) as unknown as Logger;
}

/** A logger that drops everything (unit tests of cores). */
export const nullLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return nullLogger;
  },
};
