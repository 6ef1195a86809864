/**
 * @fuxi/proto: the wire contract of Fuxi-TS. The `.proto` files under `proto/fuxi/v1` are the only
 * source of wire types; the TypeScript types here are generated from them with the same loader
 * options the runtime uses (`LOADER_OPTIONS`), and so is the precompiled descriptor
 * (`generated/descriptor.ts`) that the runtime loads instead of parsing the `.proto` files.
 *
 * ```ts
 * import { loadFuxiProto, type JobSpec } from '@fuxi/proto';
 * const fuxi = loadFuxiProto();
 * const client = new fuxi.MasterService('127.0.0.1:7070', grpc.credentials.createInsecure());
 * ```
 */
import * as grpc from '@grpc/grpc-js';
import type * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs/light.js';
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

/** protobufjs's `toObject` options: what a deserialized message looks like (int64 as decimal strings, ...). */
const CONVERSION: protobuf.IConversionOptions = { ...LOADER_OPTIONS } as protobuf.IConversionOptions;

function serializer(type: () => protobuf.Type): (arg: object) => Buffer {
  return (arg) => {
    const t = type();
    if (Array.isArray(arg)) throw new Error(`Failed to serialize message: expected object with ${t.name} structure, got array instead`);
    return t.encode(t.fromObject(arg)).finish() as Buffer;
  };
}

function deserializer(type: () => protobuf.Type): (buf: Buffer) => object {
  return (buf) => {
    const t = type();
    return t.toObject(t.decode(buf), CONVERSION);
  };
}

/** The package of every Fuxi type (the descriptor has no other, and no nested types). */
const PACKAGE = 'fuxi.v1';

type TypeJson = protobuf.INamespace & { fields?: Record<string, { type: string }>; methods?: Record<string, protobuf.IMethod> };

/** The descriptor's `fuxi.v1` namespace: every message, enum and service by its name. */
const PKG = ((): Record<string, TypeJson> => {
  let ns = FUXI_DESCRIPTOR as protobuf.INamespace;
  for (const part of PACKAGE.split('.')) ns = ns.nested![part] as protobuf.INamespace;
  return ns.nested as Record<string, TypeJson>;
})();

/** The name in `fuxi.v1` a field's type names, or undefined for a scalar. */
function localName(type: string): string | undefined {
  const name = type.replace(/^\./, '').replace(`${PACKAGE}.`, '');
  return Object.hasOwn(PKG, name) ? name : undefined;
}

/** `name` and every message and enum its fields need, transitively. */
function typeClosure(name: string): Set<string> {
  const out = new Set<string>();
  const todo = [name];
  while (todo.length > 0) {
    const n = todo.pop()!;
    if (out.has(n)) continue;
    out.add(n);
    for (const f of Object.values(PKG[n]?.fields ?? {})) {
      const t = localName(f.type);
      if (t !== undefined && !out.has(t)) todo.push(t);
    }
  }
  return out;
}

/** Message types built so far, by name (each from a root holding its closure). */
const types = new Map<string, protobuf.Type>();

/**
 * The message type `name`, built on first use from a descriptor of only the types it needs: a
 * client that submits a job builds the 8 types of SubmitJob, not the 123 of every service (the
 * whole descriptor's `Root.fromJSON` was 30 ms of a `fuxi submit`'s start). Root.fromJSON resolves
 * every type's features (proto3 packs repeated scalars), the same as for the whole descriptor
 * (the descriptor test compares every method's bytes with proto-loader's). Every type of the new
 * root is kept, so the next method needing them builds nothing.
 */
function messageType(name: string): protobuf.Type {
  const known = types.get(name);
  if (known) return known;
  const nested = Object.fromEntries([...typeClosure(name)].map((n) => [n, PKG[n]!]));
  let json: protobuf.INamespace = { nested };
  for (const part of PACKAGE.split('.').reverse()) json = { nested: { [part]: json } };
  const root = protobuf.Root.fromJSON(json);
  for (const n of Object.keys(nested)) {
    const t = root.lookup(`${PACKAGE}.${n}`);
    if (t instanceof protobuf.Type && !types.has(n)) types.set(n, t);
  }
  return types.get(name)!;
}

const definitions = new Map<string, grpc.ServiceDefinition>();

/**
 * One service's definition, built on first use; each method's message types are built on its
 * first call (`messageType`), and protobufjs generates each type's codec on its first encode or
 * decode, so a process pays only for the messages it uses.
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
    const reqType = () => messageType(req);
    const resType = () => messageType(res);
    methods[mName] = {
      path: `/${name}/${mName}`,
      requestStream: !!m.requestStream,
      responseStream: !!m.responseStream,
      requestSerialize: serializer(reqType),
      requestDeserialize: deserializer(reqType),
      responseSerialize: serializer(resType),
      responseDeserialize: deserializer(resType),
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
