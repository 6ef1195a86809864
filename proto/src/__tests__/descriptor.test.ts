import { expect } from 'chai';
import * as protoLoader from '@grpc/proto-loader';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs/light.js';
import { ENUM_VALUES, MESSAGE_CODECS } from '../generated/codecs.js';
import { FUXI_DESCRIPTOR } from '../generated/descriptor.js';
import { fuxiFileDescriptorProtos, fuxiPackageDefinition, LOADER_OPTIONS, PROTO_FILES, SERVICE_NAMES } from '../index.js';

/** proto/ (the include dir of the .proto files), from proto/dist/__tests__. */
const PROTO_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

type Method = protoLoader.MethodDefinition<object, object>;

/** A value for every field of `type` (one member per oneof, int64 at its extremes), `depth` levels down. */
function sample(type: protobuf.Type, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const skipped = new Set<string>();
  for (const o of type.oneofsArray) for (const f of o.fieldsArray.slice(1)) skipped.add(f.name);
  for (const f of type.fieldsArray) {
    if (skipped.has(f.name)) continue;
    f.resolve();
    const one = (): unknown => {
      if (f.resolvedType instanceof protobuf.Enum) return Object.keys(f.resolvedType.values).at(-1);
      if (f.resolvedType instanceof protobuf.Type) return depth > 0 ? sample(f.resolvedType, depth - 1) : {};
      switch (f.type) {
        case 'int64':
        case 'sint64':
        case 'sfixed64':
          return '-9223372036854775807';
        case 'uint64':
        case 'fixed64':
          return '18446744073709551615';
        case 'int32':
        case 'sint32':
        case 'sfixed32':
          return -7;
        case 'uint32':
        case 'fixed32':
          return 7;
        case 'double':
        case 'float':
          return 0.5;
        case 'bool':
          return true;
        case 'bytes':
          return Buffer.from([0, 1, 2, 255]);
        default:
          return `v-${f.name}`;
      }
    };
    if (f instanceof protobuf.MapField) out[f.name] = { k1: one(), k2: one() };
    else out[f.name] = f.repeated ? [one(), one()] : one();
  }
  return out;
}

describe('precompiled proto descriptor', () => {
  // What the runtime used to do: parse the .proto files with proto-loader.
  const parsed = protoLoader.loadSync(PROTO_FILES, { ...LOADER_OPTIONS, includeDirs: [PROTO_DIR] });
  const loaded = fuxiPackageDefinition();
  const root = protobuf.Root.fromJSON(FUXI_DESCRIPTOR as protobuf.INamespace).resolveAll() as protobuf.Root;

  for (const name of SERVICE_NAMES) {
    it(`${name}: every method as proto-loader builds it from the .proto files`, () => {
      const want = parsed[name] as Record<string, Method>;
      const got = loaded[name] as Record<string, Method>;
      expect(Object.keys(got)).to.deep.equal(Object.keys(want));
      for (const [m, w] of Object.entries(want)) {
        const g = got[m]!;
        expect({ path: g.path, requestStream: g.requestStream, responseStream: g.responseStream, originalName: g.originalName }).to.deep.equal(
          { path: w.path, requestStream: w.requestStream, responseStream: w.responseStream, originalName: w.originalName },
          m,
        );
        const method = root.lookupService(name).methods[m]!;
        for (const [type, ser, de] of [
          [method.resolvedRequestType!, 'requestSerialize', 'requestDeserialize'],
          [method.resolvedResponseType!, 'responseSerialize', 'responseDeserialize'],
        ] as const) {
          const value = sample(type, 3);
          const bytes = w[ser](value);
          expect(Buffer.from(g[ser](value)).equals(Buffer.from(bytes)), `${m} ${type.name} bytes`).to.equal(true);
          expect(g[de](bytes), `${m} ${type.name} decoded`).to.deep.equal(w[de](bytes));
          expect(g[de](Buffer.alloc(0)), `${m} ${type.name} defaults`).to.deep.equal(w[de](Buffer.alloc(0)));
        }
      }
    });
  }

  /** Every method of every service as [service, method, proto-loader's, ours], with its types. */
  const methods = SERVICE_NAMES.flatMap((name) =>
    Object.entries(root.lookupService(name).methods).map(([m, method]) => ({
      name: `${name}.${m}`,
      want: (parsed[name] as Record<string, Method>)[m]!,
      got: (loaded[name] as Record<string, Method>)[m]!,
      request: method.resolvedRequestType!,
      response: method.resolvedResponseType!,
    })),
  );

  it('the generated codecs cover every message and enum of the descriptor, and nothing else', () => {
    const messages: string[] = [];
    const enums: string[] = [];
    for (const o of (root.lookup('fuxi.v1') as protobuf.Namespace).nestedArray) {
      if (o instanceof protobuf.Type) messages.push(o.name);
      else if (o instanceof protobuf.Enum) enums.push(o.name);
    }
    expect(Object.keys(MESSAGE_CODECS).sort()).to.deep.equal(messages.sort());
    expect(Object.keys(ENUM_VALUES).sort()).to.deep.equal(enums.sort());
    for (const e of enums) expect(ENUM_VALUES[e], e).to.deep.equal({ ...root.lookupEnum(`fuxi.v1.${e}`).values });
  });

  it('an enum number the descriptor does not name decodes as the number, as proto-loader decodes it', () => {
    let checked = 0;
    for (const { name, want, got, request, response } of methods) {
      for (const [type, de] of [
        [request, 'requestDeserialize'],
        [response, 'responseDeserialize'],
      ] as const) {
        const field = type.fieldsArray.find((f) => !f.repeated && f.resolve().resolvedType instanceof protobuf.Enum);
        if (!field) continue;
        const bytes = Buffer.from(
          protobuf.Writer.create()
            .uint32(field.id << 3)
            .int32(99)
            .finish(),
        );
        const decoded = got[de](bytes) as Record<string, unknown>;
        expect(decoded[field.name], `${name} ${field.name}`).to.equal(99);
        expect(decoded, name).to.deep.equal(want[de](bytes));
        checked++;
      }
    }
    expect(checked).to.be.greaterThan(0);
  });

  it('a value of the wrong shape is refused with the message proto-loader gives', () => {
    let checked = 0;
    for (const { name, want, got, request } of methods) {
      for (const f of request.fieldsArray) {
        const bad = f.repeated ? { [f.name]: 5 } : f.resolve().resolvedType instanceof protobuf.Type ? { [f.name]: 'not an object' } : undefined;
        if (!bad) continue;
        const message = (fn: () => unknown): string => {
          try {
            fn();
          } catch (e) {
            return (e as Error).message;
          }
          return '(no error)';
        };
        const expected = message(() => want.requestSerialize(bad));
        expect(expected, `${name} ${f.name}`).to.not.equal('(no error)');
        expect(
          message(() => got.requestSerialize(bad)),
          `${name} ${f.name}`,
        ).to.equal(expected);
        checked++;
      }
    }
    expect(checked).to.be.greaterThan(10);
  });

  it('reflection gets the file descriptors proto-loader made from the .proto files', () => {
    const want = Object.values(parsed).find((d) => 'fileDescriptorProtos' in d) as protoLoader.MessageTypeDefinition<object, object>;
    const encoded = (list: readonly Uint8Array[]) => list.map((b) => Buffer.from(b).toString('base64'));
    expect(encoded(fuxiFileDescriptorProtos())).to.deep.equal(encoded(want.fileDescriptorProtos));
  });

  it('PROTO_FILES lists every .proto file', () => {
    const files = readdirSync(join(PROTO_DIR, 'fuxi', 'v1')).filter((f) => f.endsWith('.proto'));
    expect(PROTO_FILES).to.deep.equal(files.sort().map((f) => `fuxi/v1/${f}`));
  });
});
