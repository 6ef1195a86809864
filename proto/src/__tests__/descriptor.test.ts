import { expect } from 'chai';
import * as protoLoader from '@grpc/proto-loader';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs/light.js';
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
