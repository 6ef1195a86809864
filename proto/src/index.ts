/**
 * @fuxi/proto: the wire contract of Fuxi-TS. The `.proto` files under `proto/fuxi/v1` are the only
 * source of wire types; the TypeScript types here are generated from them with the same loader
 * options the runtime uses (`LOADER_OPTIONS`).
 *
 * ```ts
 * import { loadFuxiProto, type JobSpec } from '@fuxi/proto';
 * const fuxi = loadFuxiProto();
 * const client = new fuxi.MasterService('127.0.0.1:7070', grpc.credentials.createInsecure());
 * ```
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AgentServiceDefinition } from './generated/fuxi/v1/AgentService.js';
import type { AppMasterServiceDefinition } from './generated/fuxi/v1/AppMasterService.js';
import type { MasterServiceDefinition } from './generated/fuxi/v1/MasterService.js';

export * from './generated/index.js';

const require = createRequire(import.meta.url);

/** Options shared by the type generator and the runtime loader. */
export const LOADER_OPTIONS: protoLoader.Options = {
  ...(require('../loader-options.json') as protoLoader.Options),
  longs: String,
  enums: String,
};

/** Root folder of the `.proto` files (the include dir). */
export const PROTO_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');
export const PROTO_FILES = ['fuxi/v1/common.proto', 'fuxi/v1/master.proto', 'fuxi/v1/agent.proto', 'fuxi/v1/appmaster.proto'];

export interface FuxiServices {
  MasterService: grpc.ServiceClientConstructor & { service: MasterServiceDefinition };
  AgentService: grpc.ServiceClientConstructor & { service: AgentServiceDefinition };
  AppMasterService: grpc.ServiceClientConstructor & { service: AppMasterServiceDefinition };
}

let cachedDefinition: protoLoader.PackageDefinition | undefined;

/** The package definition of every Fuxi service (for reflection and custom loaders). */
export function fuxiPackageDefinition(): protoLoader.PackageDefinition {
  cachedDefinition ??= protoLoader.loadSync(PROTO_FILES, { ...LOADER_OPTIONS, includeDirs: [PROTO_DIR] });
  return cachedDefinition;
}

/** Loads `fuxi.v1` and returns its three service constructors. */
export function loadFuxiProto(): FuxiServices {
  const root = grpc.loadPackageDefinition(fuxiPackageDefinition()) as unknown as { fuxi: { v1: FuxiServices } };
  return root.fuxi.v1;
}
