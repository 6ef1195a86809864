/**
 * @fuxi/common: what every Fuxi-TS component shares: resource arithmetic, typed errors, the job
 * spec (parsing and validation), ids, int64 helpers and the logger interface.
 *
 * ```ts
 * import { res, fits, InvalidArgumentError } from '@fuxi/common';
 * if (!fits(res(500, 256), node.free)) throw new InvalidArgumentError('resources', 'too large');
 * ```
 */
export * from './resource.js';
export * from './errors.js';
export * from './logger.js';
export * from './epoch.js';
export * from './substitute.js';
export * from './job-spec.js';
export * from './fsm-state.js';
export * from './address.js';
export * from './protocol.js';
