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

function serializer(type: protobuf.Type): (arg: object) => Buffer {
  return (arg) => {
    if (Array.isArray(arg)) throw new Error(`Failed to serialize message: expected object with ${type.name} structure, got array instead`);
    return type.encode(type.fromObject(arg)).finish() as Buffer;
  };
}

function deserializer(type: protobuf.Type): (buf: Buffer) => object {
  return (buf) => type.toObject(type.decode(buf), CONVERSION);
}

let root: protobuf.Root | undefined;
const definitions = new Map<string, grpc.ServiceDefinition>();

/**
 * One service's definition, built on first use. protobufjs generates each type's codec on its
 * first encode or decode, so a process pays only for the messages it uses.
 */
function serviceDefinition(name: string): grpc.ServiceDefinition {
  let def = definitions.get(name);
  if (def) return def;
  // Root.fromJSON resolves every type's features (proto3 packs repeated scalars): skipping that
  // changes the encoding (the descriptor test compares bytes with proto-loader's).
  root ??= protobuf.Root.fromJSON(FUXI_DESCRIPTOR as protobuf.INamespace);
  const methods: Record<string, grpc.MethodDefinition<object, object>> = {};
  for (const m of root.lookupService(name).methodsArray) {
    m.resolve();
    const req = m.resolvedRequestType!;
    const res = m.resolvedResponseType!;
    methods[m.name] = {
      path: `/${name}/${m.name}`,
      requestStream: !!m.requestStream,
      responseStream: !!m.responseStream,
      requestSerialize: serializer(req),
      requestDeserialize: deserializer(req),
      responseSerialize: serializer(res),
      responseDeserialize: deserializer(res),
      originalName: m.name.charAt(0).toLowerCase() + m.name.slice(1),
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
