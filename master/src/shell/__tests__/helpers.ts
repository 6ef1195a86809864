/** Shared helpers of the master shell tests. */
import { RpcError } from '@fuxi/rpc';

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
