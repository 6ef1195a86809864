/**
 * fast-check arbitraries for every request of the Fuxi services, built from the wire descriptor
 * (`FUXI_DESCRIPTOR`): each field by its type, with huge and odd strings, negative and huge
 * numbers, missing fields, deep repeated and map fields. Used by the fuzz test
 * (integration/fuzz.test.ts).
 *
 * ```ts
 * for (const t of fuzzTargets()) fc.sample(t.arb, 10); // requests of t.service / t.method
 * ```
 */
import fc from 'fast-check';
import { FUXI_DESCRIPTOR } from '@fuxi/proto/generated/descriptor';

interface FieldDesc {
  type: string;
  id: number;
  rule?: string;
  keyType?: string;
}
interface TypeDesc {
  fields?: Record<string, FieldDesc>;
  values?: Record<string, number>;
  methods?: Record<string, { requestType: string; responseType: string; responseStream?: boolean }>;
}

const V1 = (FUXI_DESCRIPTOR as { nested: { fuxi: { nested: { v1: { nested: Record<string, TypeDesc> } } } } }).nested.fuxi.nested.v1.nested;

const INT32 = fc.oneof(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.constantFrom(0, -1, 1, 2 ** 31 - 1, -(2 ** 31)));
const INT64 = fc.oneof(
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
  fc.constantFrom('0', '-1', '1', '9223372036854775807', '-9223372036854775808'),
  fc.integer().map(String),
);
const STRING = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 20 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom('', '.', '..', '../../etc', '/etc/passwd', '__am__', 'default', 'node-1', '*', '${instance}', 'a/b', '\u0000', 'ü😀'),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 200 }) },
  { weight: 1, arbitrary: fc.integer({ min: 10_000, max: 300_000 }).map((n) => 'x'.repeat(n)) },
);

/** Arbitraries by type name, built once (recursive types get a depth bound). */
export function arbitraryOf(typeName: string, depth: number): fc.Arbitrary<unknown> {
  switch (typeName) {
    case 'string':
      return STRING;
    case 'bytes':
      return fc
        .oneof(
          fc.uint8Array({ maxLength: 64 }),
          fc.integer({ min: 1, max: 200_000 }).map((n) => new Uint8Array(n)),
        )
        .map((a) => Buffer.from(a));
    case 'bool':
      return fc.boolean();
    case 'int32':
    case 'sint32':
    case 'sfixed32':
      return INT32;
    case 'uint32':
    case 'fixed32':
      return fc.integer({ min: 0, max: 2 ** 32 - 1 });
    case 'int64':
    case 'sint64':
    case 'sfixed64':
    case 'uint64':
    case 'fixed64':
      return typeName.startsWith('u') || typeName.startsWith('fixed') ? fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String) : INT64;
    case 'double':
    case 'float':
      return fc.oneof(fc.double(), fc.constantFrom(Number.NaN, Infinity, -Infinity, -0, 1e308));
  }
  const name = typeName.replace(/^\.?fuxi\.v1\./, '');
  const t = V1[name];
  if (!t) return fc.constant(undefined);
  if (t.values) return fc.oneof(fc.constantFrom(...Object.keys(t.values)), fc.integer({ min: -5, max: 100 }));
  if (depth > 4) return fc.constant({});
  const shape: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [fname, f] of Object.entries(t.fields ?? {})) {
    const value = arbitraryOf(f.type, depth + 1);
    if (f.keyType)
      shape[fname] = fc.dictionary(
        STRING.filter((k) => k.length < 1000),
        value,
        { maxKeys: depth < 2 ? 20 : 3 },
      );
    else if (f.rule === 'repeated') shape[fname] = fc.array(value, { maxLength: depth < 2 ? 30 : 3 });
    else shape[fname] = value;
  }
  // Any field may be missing.
  return fc.record(shape, { requiredKeys: [] });
}

export interface FuzzTarget {
  service: 'MasterService' | 'AgentService' | 'AppMasterService';
  method: string;
  stream: boolean;
  arb: fc.Arbitrary<unknown>;
}

/** Every method of the three services with an arbitrary of its request. */
export function fuzzTargets(): FuzzTarget[] {
  const out: FuzzTarget[] = [];
  for (const service of ['MasterService', 'AgentService', 'AppMasterService'] as const) {
    for (const [method, m] of Object.entries(V1[service]?.methods ?? {})) {
      out.push({ service, method, stream: !!m.responseStream, arb: arbitraryOf(m.requestType, 0) });
    }
  }
  return out;
}

/** Every string in a request (keys of maps too): the ids an accepted call may have made real. */
export function stringsOf(v: unknown, into: Set<string>): void {
  if (typeof v === 'string') into.add(v);
  else if (Array.isArray(v)) v.forEach((x) => stringsOf(x, into));
  else if (v && typeof v === 'object' && !Buffer.isBuffer(v))
    for (const [k, x] of Object.entries(v)) {
      into.add(k);
      stringsOf(x, into);
    }
}
