/**
 * A connection to "the master": a list of master addresses, following a standby's redirect to the
 * leader and retrying calls that are safe to retry (`Retrier`: 50 ms doubling to 1 s, jittered).
 */
import { isTransientError } from '@fuxi/common';
import { loadFuxiProto, type MasterServiceDefinition } from '@fuxi/proto';
import type { MethodDefinition } from '@grpc/proto-loader';
import { connect, type CallOptions, type TypedClient } from './client.js';
import type { MethodName } from './server.js';
import { RpcError } from './errors.js';
import { Retrier } from './retry.js';
import type { Transport } from './tls.js';

export type MasterClient = TypedClient<MasterServiceDefinition>;

/* eslint-disable @typescript-eslint/no-explicit-any */
type ReqOf<M> = M extends MethodDefinition<infer Req, any, any, any> ? Req : never;
type ResOf<M> = M extends MethodDefinition<any, any, any, infer Res> ? Res : never;
/* eslint-enable @typescript-eslint/no-explicit-any */
type MasterMethod = MethodName<MasterServiceDefinition> & keyof MasterServiceDefinition;

export interface MasterConnectionOptions {
  /** Give up after this long of failed attempts (default 30 s). */
  retryForMs?: number;
  onRedirect?: (from: string, to: string) => void;
  /**
   * A master process answered at `address`: a result, a redirect, or any refusal that is not a
   * failure to reach it (UNAVAILABLE, DEADLINE_EXCEEDED). A standby's redirect during a failover
   * counts; silence from every master (a cut) does not.
   */
  onAnswer?: (address: string) => void;
  /** The bearer token sent with every call (client.ts `ConnectOptions`). */
  token?: string | (() => string | undefined);
  /** Mutual TLS or plaintext; default the process's (`setDefaultTransport`). */
  transport?: Transport;
}

export class MasterConnection {
  private clients = new Map<string, MasterClient>();
  private current: string;
  /** Aborted by close(): calls in flight stop retrying. */
  private closing = new AbortController();

  constructor(
    readonly addresses: readonly string[],
    private readonly opts: MasterConnectionOptions = {},
  ) {
    if (addresses.length === 0) throw new Error('at least one master address is needed');
    this.current = addresses[0] as string;
  }

  get address(): string {
    return this.current;
  }

  client(address = this.current): MasterClient {
    let c = this.clients.get(address);
    if (!c) {
      c = connect(loadFuxiProto().MasterService, address, { token: this.opts.token, transport: this.opts.transport });
      this.clients.set(address, c);
    }
    return c;
  }

  /**
   * Calls `method`, following leader redirects; when `retry` is set (idempotent calls), also
   * retries UNAVAILABLE / DEADLINE_EXCEEDED across the known masters until `retryForMs` (or
   * until close()).
   */
  async call<K extends MasterMethod>(
    method: K,
    req: ReqOf<MasterServiceDefinition[K]>,
    opts: CallOptions & { retry?: boolean } = {},
  ): Promise<ResOf<MasterServiceDefinition[K]>> {
    const deadline = Date.now() + (this.opts.retryForMs ?? 30_000);
    let retrier: Retrier | undefined;
    for (;;) {
      const fn = (this.client() as unknown as Record<string, (r: unknown, o: CallOptions) => Promise<ResOf<MasterServiceDefinition[K]>>>)[method]!;
      try {
        const res = await fn(req, opts);
        this.opts.onAnswer?.(this.current);
        return res;
      } catch (e) {
        if (!(e instanceof RpcError)) throw e;
        const leader = e.leader;
        if (leader || !isTransientError(e)) this.opts.onAnswer?.(this.current);
        if (leader && leader !== this.current) {
          this.opts.onRedirect?.(this.current, leader);
          this.current = leader;
          continue;
        }
        const transient = isTransientError(e);
        // The next call (retried or not) goes to the next master: a dead or frozen leader must not
        // keep callers that never retry (heartbeats) from finding the new one.
        if (transient && this.addresses.length > 1) {
          this.current = this.addresses[(this.addresses.indexOf(this.current) + 1) % this.addresses.length] as string;
        }
        if (!transient || !opts.retry) throw e;
        retrier ??= new Retrier({ initialMs: 50, maxMs: 1000, deadline, signal: this.closing.signal });
        await retrier.failed(e);
      }
    }
  }

  /** Closes the channels and ends the retries of calls in flight (a later call opens new ones). */
  close(): void {
    this.closing.abort();
    this.closing = new AbortController();
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}
