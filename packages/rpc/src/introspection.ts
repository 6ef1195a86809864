/**
 * grpc.health.v1 and server reflection on every server, each loaded on its first call. Both
 * libraries parse their .proto files with proto-loader when loaded, and reflection decodes every
 * file descriptor it serves: about 75 ms of CPU that would otherwise delay every daemon's start
 * (each job's AM above all), while most servers never get such a call. Their methods are registered
 * up front by path; the first request loads the library (synchronously) and hands every call to the
 * handler the library registers itself (`captureServices`).
 */
import type * as grpc from '@grpc/grpc-js';
import type { PackageDefinition } from '@grpc/proto-loader';
import type { HealthImplementation, ServingStatus } from 'grpc-health-check';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export type MethodType = 'unary' | 'serverStream' | 'clientStream' | 'bidi';

/** The methods `grpc-health-check`'s `HealthImplementation` implements. */
export const HEALTH_METHODS: ReadonlyArray<readonly [path: string, type: MethodType]> = [
  ['/grpc.health.v1.Health/Check', 'unary'],
  ['/grpc.health.v1.Health/Watch', 'serverStream'],
  ['/grpc.health.v1.Health/List', 'unary'],
];

/** The methods `@grpc/reflection`'s `ReflectionService` implements. */
export const REFLECTION_METHODS: ReadonlyArray<readonly [path: string, type: MethodType]> = [
  ['/grpc.reflection.v1.ServerReflection/ServerReflectionInfo', 'bidi'],
  ['/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo', 'bidi'],
];

export interface CapturedMethod {
  method: grpc.MethodDefinition<unknown, unknown>;
  handler: (...args: unknown[]) => unknown;
}

/** What `addToServer(server)` registers, by path (as grpc-js would bind it), without a server. */
export function captureServices(addToServer: (server: grpc.Server) => void): Map<string, CapturedMethod> {
  const out = new Map<string, CapturedMethod>();
  const recorder = {
    addService(def: grpc.ServiceDefinition, impl: Record<string, ((...args: unknown[]) => unknown) | undefined>) {
      for (const [name, method] of Object.entries(def)) {
        const fn = impl[name] ?? (typeof method.originalName === 'string' ? impl[method.originalName] : undefined);
        if (fn) out.set(method.path, { method: method as grpc.MethodDefinition<unknown, unknown>, handler: fn.bind(impl) });
      }
    },
  };
  addToServer(recorder as unknown as grpc.Server);
  return out;
}

/** The type grpc-js gives a method with these streaming flags. */
export function methodType(m: { requestStream: boolean; responseStream: boolean }): MethodType {
  if (m.requestStream) return m.responseStream ? 'bidi' : 'clientStream';
  return m.responseStream ? 'serverStream' : 'unary';
}

/** Registers `methods` on `server`; `load` runs on the first call to any of them. */
function registerLazily(server: grpc.Server, methods: ReadonlyArray<readonly [string, MethodType]>, load: () => Map<string, CapturedMethod>): void {
  let loaded: Map<string, CapturedMethod> | undefined;
  const get = (path: string): CapturedMethod => {
    loaded ??= load();
    const m = loaded.get(path);
    if (!m) throw new Error(`${path} is not implemented by the loaded library`);
    return m;
  };
  for (const [path, type] of methods) {
    server.register(
      path,
      ((call: unknown, callback?: unknown) => get(path).handler(call, callback)) as grpc.UntypedHandleCall,
      (value: unknown) => get(path).method.responseSerialize(value),
      (buf: Buffer) => get(path).method.requestDeserialize(buf),
      type,
    );
  }
}

export interface Health {
  setStatus(service: string, status: ServingStatus): void;
}

/** grpc.health.v1 with these statuses (service '' is the server as a whole). */
export function addHealth(server: grpc.Server, initial: Record<string, ServingStatus>): Health {
  const statuses = new Map(Object.entries(initial));
  let impl: HealthImplementation | undefined;
  registerLazily(server, HEALTH_METHODS, () => {
    const lib = require('grpc-health-check') as typeof import('grpc-health-check');
    const health = new lib.HealthImplementation(Object.fromEntries(statuses));
    impl = health;
    return captureServices((s) => health.addToServer(s));
  });
  return {
    setStatus(service, status) {
      statuses.set(service, status);
      impl?.setStatus(service, status);
    },
  };
}

/** Server reflection over these encoded FileDescriptorProtos (it reads nothing else). */
export function addReflection(server: grpc.Server, fileDescriptorProtos: () => Buffer[]): void {
  registerLazily(server, REFLECTION_METHODS, () => {
    const lib = require('@grpc/reflection') as typeof import('@grpc/reflection');
    const reflection = new lib.ReflectionService({ 'fuxi.v1': { fileDescriptorProtos: fileDescriptorProtos() } } as unknown as PackageDefinition);
    return captureServices((s) => reflection.addToServer(s));
  });
}
