/**
 * A connection to "the master": a list of master addresses, following a standby's redirect to the
 * leader and retrying calls that are safe to retry (`Retrier`: 50 ms doubling to 1 s, jittered).
 */
import * as grpc from '@grpc/grpc-js';
import { isTransientError } from '@fuxi/common';
import { loadFuxiProto, type MasterServiceDefinition } from '@fuxi/proto';
import type { MethodDefinition } from '@grpc/proto-loader';
import { connect, type CallOptions, type TypedClient } from './client.js';
import type { MethodName } from './server.js';
import { RpcError } from './errors.js';
import { Retrier } from './retry.js';
import { CallGate } from './call-gate.js';
import { AM_BATCHED, batcherFor } from './call-batch.js';
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
  /**
   * The AM's own calls (call-batch.ts `AM_BATCHED`) go in batches (`AmCalls`) shared by every
   * connection of the process to the same master: an AM host's hosted AMs set it. Each call keeps
   * its token, its answer and its errors, and the retries and redirects here.
   */
  batch?: boolean;
}

/**
 * The leader a standby last named, by set of master addresses: shared by every connection of the
 * process (an AM host's hundreds of AMs, an agent and its AMs), so that in a failover one redirect
 * moves them all, instead of each asking a standby in turn.
 */
const leaderHints = new Map<string, string>();

/**
 * Master calls in flight per process (call-gate.ts): enough for any daemon's steady state, few
 * enough that a process reporting hundreds of AMs in a failover reads every answer within its
 * deadline.
 */
const gate = new CallGate(64);

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
    this.hintKey = [...addresses].sort().join(',');
  }

  private readonly hintKey: string;

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
    let first = true;
    for (;;) {
      try {
        const res = await gate.run(() => {
          // The current master's connection failed (another caller of the process found it dead):
          // start at the next one that is not known to have failed.
          if (first && this.addresses.length > 1 && this.connectFailed(this.current)) this.current = this.nextAddress();
          first = false;
          const client = this.client();
          const fn = (client as unknown as Record<string, (r: unknown, o: CallOptions) => Promise<ResOf<MasterServiceDefinition[K]>>>)[method]!;
          if (!this.opts.batch) return fn(req, opts);
          const tok = this.opts.token;
          const token = opts.token ?? (typeof tok === 'function' ? tok() : tok) ?? '';
          return batcherFor(client, loadFuxiProto().MasterService.service, AM_BATCHED).call(client, method, req as object, { ...opts, token }, () =>
            fn(req, opts),
          );
        });
        this.opts.onAnswer?.(this.current);
        return res;
      } catch (e) {
        if (!(e instanceof RpcError)) throw e;
        const leader = e.leader;
        if (leader || !isTransientError(e)) this.opts.onAnswer?.(this.current);
        if (leader && leader !== this.current) {
          leaderHints.set(this.hintKey, leader);
          this.opts.onRedirect?.(this.current, leader);
          this.current = leader;
          continue;
        }
        const transient = isTransientError(e);
        // The next call (retried or not) goes to the next master: a dead or frozen leader must not
        // keep callers that never retry (heartbeats) from finding the new one.
        if (transient && this.addresses.length > 1) this.current = this.nextAddress();
        if (!transient || !opts.retry) throw e;
        retrier ??= new Retrier({ initialMs: 50, maxMs: 1000, deadline, signal: this.closing.signal });
        await retrier.failed(e);
      }
    }
  }

  /**
   * Where to go when the current master failed: the leader a standby last named to any connection
   * of this process (when it is another and its channel has not failed), else the next master in
   * the list, passing over those whose channel failed to connect (refused, unreachable: in its
   * reconnect backoff) while another is not known to have failed. In a failover every caller of
   * the process would otherwise call the dead leader again at each turn of the list (and each such
   * call fails and is retried); a standby's redirect is followed whatever the state of its
   * target's channel.
   */
  private nextAddress(): string {
    const hint = leaderHints.get(this.hintKey);
    if (hint !== undefined && hint !== this.current && !this.connectFailed(hint)) return hint;
    const n = this.addresses.length;
    const from = this.addresses.indexOf(this.current);
    let first: string | undefined;
    for (let i = 1; i <= n; i++) {
      const a = this.addresses[(from + i) % n] as string;
      first ??= a;
      if (a !== this.current && !this.connectFailed(a)) return a;
    }
    return first ?? this.current;
  }

  /** Whether the (shared) channel to `address` is in TRANSIENT_FAILURE: its last connection attempt failed. */
  private connectFailed(address: string): boolean {
    return this.client(address).raw.getChannel().getConnectivityState(false) === grpc.connectivityState.TRANSIENT_FAILURE;
  }

  /** Closes the channels and ends the retries of calls in flight (a later call opens new ones). */
  close(): void {
    this.closing.abort();
    this.closing = new AbortController();
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}
