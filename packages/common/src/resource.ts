/**
 * Resource arithmetic. Every computation on resources in Fuxi-TS goes through this module so that
 * adding a dimension (gpu, disk) is a change in one place.
 */
import { InvalidArgumentError } from './errors.js';

export interface Resource {
  readonly cpuMilli: number;
  readonly memoryMb: number;
}

export const ZERO: Resource = Object.freeze({ cpuMilli: 0, memoryMb: 0 });

export function res(cpuMilli: number, memoryMb: number): Resource {
  return { cpuMilli, memoryMb };
}

export function add(a: Resource, b: Resource): Resource {
  return { cpuMilli: a.cpuMilli + b.cpuMilli, memoryMb: a.memoryMb + b.memoryMb };
}

export function sub(a: Resource, b: Resource): Resource {
  return { cpuMilli: a.cpuMilli - b.cpuMilli, memoryMb: a.memoryMb - b.memoryMb };
}

export function scale(a: Resource, n: number): Resource {
  return { cpuMilli: a.cpuMilli * n, memoryMb: a.memoryMb * n };
}

/** True when `a` fits inside `b` in every dimension. */
export function fits(a: Resource, b: Resource): boolean {
  return a.cpuMilli <= b.cpuMilli && a.memoryMb <= b.memoryMb;
}

export function isZero(a: Resource): boolean {
  return a.cpuMilli === 0 && a.memoryMb === 0;
}

export function isNonNegative(a: Resource): boolean {
  return a.cpuMilli >= 0 && a.memoryMb >= 0;
}

export function equals(a: Resource, b: Resource): boolean {
  return a.cpuMilli === b.cpuMilli && a.memoryMb === b.memoryMb;
}

export function max(a: Resource, b: Resource): Resource {
  return { cpuMilli: Math.max(a.cpuMilli, b.cpuMilli), memoryMb: Math.max(a.memoryMb, b.memoryMb) };
}

export function min(a: Resource, b: Resource): Resource {
  return { cpuMilli: Math.min(a.cpuMilli, b.cpuMilli), memoryMb: Math.min(a.memoryMb, b.memoryMb) };
}

/** The dimensions (field names) in which `a` is larger than `b`, e.g. `['cpuMilli']`; empty when `a` fits. */
export function dimensionsOver(a: Resource, b: Resource): Array<keyof Resource> {
  const over: Array<keyof Resource> = [];
  if (a.cpuMilli > b.cpuMilli) over.push('cpuMilli');
  if (a.memoryMb > b.memoryMb) over.push('memoryMb');
  return over;
}

/** How many whole copies of `unit` fit into `avail` (Infinity when unit is zero). */
export function slotsThatFit(unit: Resource, avail: Resource): number {
  const c = unit.cpuMilli > 0 ? Math.floor(avail.cpuMilli / unit.cpuMilli) : Infinity;
  const m = unit.memoryMb > 0 ? Math.floor(avail.memoryMb / unit.memoryMb) : Infinity;
  return Math.max(0, Math.min(c, m));
}

/** Dominant share of `used` relative to `total` (DRF): the largest fraction over dimensions. */
export function dominantShare(used: Resource, total: Resource): number {
  const c = total.cpuMilli > 0 ? used.cpuMilli / total.cpuMilli : 0;
  const m = total.memoryMb > 0 ? used.memoryMb / total.memoryMb : 0;
  return Math.max(c, m);
}

export function format(r: Resource): string {
  const cpu = r.cpuMilli % 1000 === 0 ? `${r.cpuMilli / 1000}` : `${r.cpuMilli}m`;
  const mem = r.memoryMb % 1024 === 0 && r.memoryMb !== 0 ? `${r.memoryMb / 1024}Gi` : `${r.memoryMb}Mi`;
  return `cpu=${cpu} mem=${mem}`;
}

/**
 * Parses a CPU quantity: a number of cores (`2`, `0.5`) or millicores (`500m`).
 * `field` names the input in the error.
 */
export function parseCpu(v: unknown, field: string): number {
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new InvalidArgumentError(field, 'must be a finite number of cores');
    return Math.round(v * 1000);
  }
  if (typeof v === 'string') {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(m?)\s*$/.exec(v);
    if (m?.[1] !== undefined) return m[2] === 'm' ? Math.round(Number(m[1])) : Math.round(Number(m[1]) * 1000);
    if (/^\s*-/.test(v)) throw new InvalidArgumentError(field, `must be positive, got "${v}"`);
  }
  throw new InvalidArgumentError(field, `must be a number of cores (e.g. 0.5) or millicores (e.g. "500m"), got ${JSON.stringify(v)}`);
}

const MEM_UNITS: Record<string, number> = { '': 1, m: 1, mi: 1, mb: 1, g: 1024, gi: 1024, gb: 1024, t: 1024 * 1024, ti: 1024 * 1024, tb: 1024 * 1024 };

/** Parses a memory quantity: megabytes as a number (`512`) or with a unit (`512Mi`, `2Gi`, `1G`). */
export function parseMemory(v: unknown, field: string): number {
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new InvalidArgumentError(field, 'must be a finite number of megabytes');
    return Math.round(v);
  }
  if (typeof v === 'string') {
    const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(v);
    const unit = MEM_UNITS[(m?.[2] ?? '').toLowerCase()];
    if (m?.[1] !== undefined && unit !== undefined) return Math.round(Number(m[1]) * unit);
    if (/^\s*-/.test(v)) throw new InvalidArgumentError(field, `must be positive, got "${v}"`);
  }
  throw new InvalidArgumentError(field, `must be megabytes (e.g. 512) or a quantity like "512Mi" or "2Gi", got ${JSON.stringify(v)}`);
}
