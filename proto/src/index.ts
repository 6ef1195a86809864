/**
 * @fuxi/proto: the wire contract of Fuxi-TS. The `.proto` files under `proto/fuxi/v1` are the only
 * source of wire types; the TypeScript types here are generated from them with the same loader
 * options the runtime uses (`LOADER_OPTIONS`), and so are the precompiled descriptor
 * (`generated/descriptor.ts`) that the runtime loads instead of parsing the `.proto` files and the
 * codecs (`generated/codecs.ts`) it runs instead of generating them from reflection.
 *
 * ```ts
 * import { loadFuxiProto, type JobSpec } from '@fuxi/proto';
 * const fuxi = loadFuxiProto();
 * const client = new fuxi.MasterService('127.0.0.1:7070', grpc.credentials.createInsecure());
 * ```
 */
import * as grpc from '@grpc/grpc-js';
import type * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs/minimal.js';
import { ENUM_VALUES, MESSAGE_CODECS } from './generated/codecs.js';
import { FILE_DESCRIPTOR_PROTOS, FUXI_DESCRIPTOR, GENERATED_LOADER_OPTIONS } from './generated/descriptor.js';
import type { AgentServiceDefinition } from './generated/fuxi/v1/AgentService.js';
import type { AppMasterServiceDefinition } from './generated/fuxi/v1/AppMasterService.js';
import type { MasterServiceDefinition } from './generated/fuxi/v1/MasterService.js';
import type { SchedulerServiceDefinition } from './generated/fuxi/v1/SchedulerService.js';

export * from './generated/index.js';

/** Options shared by the type generator and the runtime loader (`proto/loader-options.json`). */
export const LOADER_OPTIONS: protoLoader.Options = {
  ...GENERATED_LOADER_OPTIONS,
  longs: String,
  enums: String,
};

/** Every `.proto` file (relative to `proto/`, the include dir), in the order the generator loads them. */
export const PROTO_FILES = ['fuxi/v1/agent.proto', 'fuxi/v1/appmaster.proto', 'fuxi/v1/common.proto', 'fuxi/v1/master.proto', 'fuxi/v1/scheduler.proto'];
export const SERVICE_NAMES = ['fuxi.v1.MasterService', 'fuxi.v1.AgentService', 'fuxi.v1.AppMasterService', 'fuxi.v1.SchedulerService'] as const;

export interface FuxiServices {
  MasterService: grpc.ServiceClientConstructor & { service: MasterServiceDefinition };
  AgentService: grpc.ServiceClientConstructor & { service: AgentServiceDefinition };
  AppMasterService: grpc.ServiceClientConstructor & { service: AppMasterServiceDefinition };
  SchedulerService: grpc.ServiceClientConstructor & { service: SchedulerServiceDefinition };
}

/** The package of every Fuxi type (the descriptor has no other, and no nested types). */
const PACKAGE = 'fuxi.v1';

/** protobufjs's `toObject` options: what a deserialized message looks like (int64 as decimal strings, ...). */
const CONVERSION = { ...LOADER_OPTIONS } as protobuf.IConversionOptions;

/** A message's functions, as protobufjs generates them for a reflected type (`generated/codecs.ts`). */
interface Codec {
  ctor: new () => object;
  encode(message: object): protobuf.Writer;
  decode(buf: Uint8Array): object;
  fromObject(object: object): object;
  toObject(message: object, options: protobuf.IConversionOptions): object;
}

/** An enum as the generated code reads it (`types[i].values`): its values by name, and by number through the prototype. */
function enumOf(values: Record<string, number>): { values: Record<string | number, string | number> } {
  const byId: Record<number, string> = {};
  for (const [k, v] of Object.entries(values)) byId[v] = k;
  return { values: Object.assign(Object.create(byId) as Record<string | number, string | number>, values) };
}

/** Codecs made so far, by message name. */
const codecs = new Map<string, Codec>();
const enums = new Map<string, { values: Record<string | number, string | number> }>();

/**
 * The codec of message `name`, made on first use from its generated factory with the codecs and
 * enums its fields name (made here too, transitively; a message is registered before its fields'
 * types, so a recursive one finds itself). The functions are compiled with the rest of this
 * package's code, not generated from reflection at run time: that was about 10 ms of a `fuxi`
 * command's start (the types a call needs built from the descriptor, then each type's code
 * generated and compiled with `Function`).
 */
function codec(name: string): Codec {
  const known = codecs.get(name);
  if (known) return known;
  const entry = MESSAGE_CODECS[name];
  if (!entry) throw new Error(`no message ${PACKAGE}.${name} in the Fuxi descriptor`);
  const [fieldTypes, make] = entry;
  const types: unknown[] = [];
  const made = make(protobuf.Writer, protobuf.Reader, protobuf.util, types) as Codec;
  codecs.set(name, made);
  for (const t of fieldTypes) {
    if (t === null) types.push(null);
    else if (Object.hasOwn(ENUM_VALUES, t)) {
      let e = enums.get(t);
      if (!e) enums.set(t, (e = enumOf(ENUM_VALUES[t]!)));
      types.push(e);
    } else types.push(codec(t));
  }
  return made;
}

function serializer(name: string): (arg: object) => Buffer {
  return (arg) => {
    const c = codec(name);
    if (Array.isArray(arg)) throw new Error(`Failed to serialize message: expected object with ${name} structure, got array instead`);
    return c.encode(c.fromObject(arg)).finish() as Buffer;
  };
}

function deserializer(name: string): (buf: Buffer) => object {
  return (buf) => {
    const c = codec(name);
    return c.toObject(c.decode(buf), CONVERSION);
  };
}

type TypeJson = protobuf.INamespace & { methods?: Record<string, protobuf.IMethod> };

/** The descriptor's `fuxi.v1` namespace: every message, enum and service by its name. */
const PKG = ((): Record<string, TypeJson> => {
  let ns = FUXI_DESCRIPTOR as protobuf.INamespace;
  for (const part of PACKAGE.split('.')) ns = ns.nested![part] as protobuf.INamespace;
  return ns.nested as Record<string, TypeJson>;
})();

/** The name in `fuxi.v1` a method's type names, or undefined when it is not there. */
function localName(type: string): string | undefined {
  const name = type.replace(/^\./, '').replace(`${PACKAGE}.`, '');
  return Object.hasOwn(PKG, name) ? name : undefined;
}

const definitions = new Map<string, grpc.ServiceDefinition>();

/**
 * One service's definition, built on first use; each method's codecs are made on its first call
 * (`codec`), so a process pays only for the messages it uses.
 */
function serviceDefinition(name: string): grpc.ServiceDefinition {
  let def = definitions.get(name);
  if (def) return def;
  const service = PKG[name.slice(PACKAGE.length + 1)];
  if (!service?.methods) throw new Error(`no service ${name} in the Fuxi descriptor`);
  const methods: Record<string, grpc.MethodDefinition<object, object>> = {};
  for (const [mName, m] of Object.entries(service.methods)) {
    const req = localName(m.requestType);
    const res = localName(m.responseType);
    if (req === undefined || res === undefined) throw new Error(`${name}.${mName}: its request or response type is not in ${PACKAGE}`);
    methods[mName] = {
      path: `/${name}/${mName}`,
      requestStream: !!m.requestStream,
      responseStream: !!m.responseStream,
      requestSerialize: serializer(req),
      requestDeserialize: deserializer(req),
      responseSerialize: serializer(res),
      responseDeserialize: deserializer(res),
      originalName: mName.charAt(0).toLowerCase() + mName.slice(1),
    };
  }
  def = methods;
  definitions.set(name, def);
  return def;
}

/**
 * The package definition of the Fuxi services, built from the precompiled descriptor. Each
 * method carries what gRPC uses (path, streaming, serializers as proto-loader builds them with
 * `LOADER_OPTIONS`, `originalName`); the `requestType` / `responseType` descriptor objects that
 * proto-loader adds are not built (nothing reads them; reflection uses `fuxiFileDescriptorProtos`).
 */
export function fuxiPackageDefinition(): protoLoader.PackageDefinition {
  return Object.fromEntries(SERVICE_NAMES.map((n) => [n, serviceDefinition(n)])) as unknown as protoLoader.PackageDefinition;
}

/** Each `.proto` file as an encoded FileDescriptorProto: what server reflection serves. */
export function fuxiFileDescriptorProtos(): Buffer[] {
  return FILE_DESCRIPTOR_PROTOS.map((b) => Buffer.from(b, 'base64'));
}

const constructors = new Map<string, grpc.ServiceClientConstructor>();

function clientConstructor(name: (typeof SERVICE_NAMES)[number]): grpc.ServiceClientConstructor {
  let c = constructors.get(name);
  if (!c) {
    c = grpc.makeClientConstructor(serviceDefinition(name), name.slice(name.lastIndexOf('.') + 1), {});
    constructors.set(name, c);
  }
  return c;
}

/**
 * The service constructors of `fuxi.v1` (as `grpc.loadPackageDefinition` makes them), each
 * built when first read.
 */
export function loadFuxiProto(): FuxiServices {
  return {
    get MasterService() {
      return clientConstructor('fuxi.v1.MasterService') as FuxiServices['MasterService'];
    },
    get AgentService() {
      return clientConstructor('fuxi.v1.AgentService') as FuxiServices['AgentService'];
    },
    get AppMasterService() {
      return clientConstructor('fuxi.v1.AppMasterService') as FuxiServices['AppMasterService'];
    },
    get SchedulerService() {
      return clientConstructor('fuxi.v1.SchedulerService') as FuxiServices['SchedulerService'];
    },
  };
}
