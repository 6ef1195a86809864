/** Shared helpers of the master shell tests. */
import { nullLogger } from '@fuxi/common';
import { loadFuxiProto, type MasterServiceDefinition } from '@fuxi/proto';
import { connect, RpcError, type TypedClient } from '@fuxi/rpc';
import type { Store } from '@fuxi/store';
import { defaultConfig, type MasterConfig } from '../config.js';
import { MasterServer } from '../master-server.js';

/** The RpcError a call fails with; throws when it succeeds or fails otherwise. */
export async function rpcError(p: Promise<unknown>): Promise<RpcError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof RpcError) return e;
    throw e;
  }
  throw new Error('expected the call to fail');
}

/**
 * A MasterServer on loopback over `store` (memory-store config, `over` on top) and a client of it:
 * what the shell tests of one MasterService method start before each case.
 */
export async function loopbackMaster(
  store: Store,
  over: Partial<MasterConfig> = {},
): Promise<{ server: MasterServer; client: TypedClient<MasterServiceDefinition> }> {
  const server = new MasterServer({ ...defaultConfig(['true']), listen: '127.0.0.1:0', store: 'memory', ...over }, nullLogger, { store });
  await server.start();
  return { server, client: connect(loadFuxiProto().MasterService, server.address) };
}
