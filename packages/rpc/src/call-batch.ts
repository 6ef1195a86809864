/**
 * Many callers' unary calls of one service carried in one call (`MasterService.AmCalls`): an AM
 * host's hosted AMs each make a handful of master calls per job, and each call alone costs about
 * as much CPU in gRPC, HTTP/2 and TLS on both ends as the work it asks for. Batched, every entry
 * keeps what makes it that caller's call: its method, its request, its own bearer token (the AM
 * attempt's), and its own answer or error. The server side runs each entry through the very
 * handler (authorization and all) a call alone would reach.
 *
 * The client side (`CallBatcher`) coalesces the calls made in one turn of the event loop, and
 * while `maxInFlight` batches are out, every call made meanwhile: with nothing in flight a call
 * leaves at once (no added latency when idle), and under load the batches grow by themselves (as a
 * group commit does). A batch of one call is sent as that call alone (a lone AM pays nothing for
 * the batching). One batcher per channel: every AM of a process shares its batches.
 *
 * ```ts
 * // client (master-connection.ts, when `batch` is set):
 * const res = await batcherFor(client, AM_BATCHED).call('UpdateRequests', req, { token });
 * // server (the master's handlers):
 * AmCalls: batchedCalls(MasterService, () => wrappedHandlers, AM_BATCHED, observe)
 * ```
 */
import * as grpc from '@grpc/grpc-js';
import type { MethodDefinition } from '@grpc/proto-loader';
import type { BatchedResult, CallBatch, CallBatchResult, CallBatchResult__Output, CallBatch__Output } from '@fuxi/proto';
import { InvalidArgumentError } from '@fuxi/common';
import { batchedErrorOf, fromBatchedError, RpcError } from './errors.js';
import { tokenMetadata } from './auth.js';
import { DEFAULT_DEADLINE_MS, type CallOptions } from './client.js';
import type { HandlerObserver } from './server.js';

type AnyMethod = MethodDefinition<object, object, object, object>;

/** The unary methods a batch may carry (MasterService.AmCalls): the AM's own calls that change state. */
export const AM_BATCHED: ReadonlySet<string> = new Set(['RegisterApp', 'UpdateRequests', 'ReturnSlots', 'ReportAppState', 'FinishApp', 'SaveAppSnapshot']);

/** The method of a service definition, by name. */
function methodOf(definition: object, method: string): AnyMethod | undefined {
  const def = (definition as Record<string, AnyMethod | undefined>)[method];
  return def && !def.responseStream && !def.requestStream ? def : undefined;
}

// ------------------------------------------------------------------ server

/** Calls a batch may carry (the client sends at most 64): a larger one is refused whole, naming `calls`. */
export const MAX_BATCHED_CALLS = 1000;

type EntryHandler = (req: object, call: object) => unknown;

/**
 * The handler of a batch call: each entry decoded as its method's request and run by `handlers()`'s
 * function of that method, with a call of its own (its bearer token as the call's metadata; the
 * batch caller's when the entry has none), all at once; answered when every entry is, each with its
 * response or its error. `observe` hears of each entry as of a call alone (metrics by method).
 */
export function batchedCalls(
  definition: object,
  handlers: () => object,
  allowed: ReadonlySet<string>,
  observe?: HandlerObserver,
): (req: CallBatch__Output, call: grpc.ServerUnaryCall<CallBatch__Output, CallBatchResult>) => Promise<CallBatchResult> {
  return async (req, call) => {
    if (req.calls.length > MAX_BATCHED_CALLS) throw new InvalidArgumentError('calls', `${req.calls.length} calls in one batch; at most ${MAX_BATCHED_CALLS}`);
    const results = await Promise.all(
      req.calls.map(async (c, i): Promise<BatchedResult> => {
        const start = process.hrtime.bigint();
        let service = '';
        let outcome: BatchedResult;
        try {
          const def = allowed.has(c.method) ? methodOf(definition, c.method) : undefined;
          if (!def) throw new InvalidArgumentError(`calls[${i}].method`, `${JSON.stringify(c.method)} cannot be batched; one of ${[...allowed].join(', ')}`);
          service = def.path.split('/')[1] ?? '';
          let request: object;
          try {
            request = def.requestDeserialize(Buffer.from(c.request));
          } catch (e) {
            throw new InvalidArgumentError(`calls[${i}].request`, `is not a ${c.method} request: ${e instanceof Error ? e.message : String(e)}`);
          }
          const fn = (handlers() as Record<string, EntryHandler | undefined>)[c.method];
          if (!fn) throw new InvalidArgumentError(`calls[${i}].method`, `${c.method} is not served here`);
          // A call of its own: its token, its request; everything else (the peer, its
          // certificate, cancellation) is the batch call's.
          const entryCall = Object.create(call, {
            metadata: { value: c.token ? tokenMetadata(c.token) : call.metadata },
            request: { value: request },
          }) as object;
          const res = (await fn(request, entryCall)) as object;
          outcome = { response: def.responseSerialize(res) };
        } catch (e) {
          outcome = batchedErrorOf(e);
        }
        if (observe && service) observe(service, c.method, outcome.code || 'OK', Number(process.hrtime.bigint() - start) / 1e9);
        return outcome;
      }),
    );
    return { results };
  };
}

// ------------------------------------------------------------------ client

/** A client that can send a batch (a TypedClient of a service with an `AmCalls` method). */
export interface BatchSender {
  AmCalls(req: CallBatch, opts?: CallOptions): Promise<CallBatchResult__Output>;
  readonly raw: grpc.Client;
}

export interface CallBatcherOptions {
  /** Calls per batch (default 64). */
  maxCalls?: number;
  /** Request bytes per batch (default 1 MiB; a larger call goes alone). */
  maxBytes?: number;
  /** Batches out at once (default 2): more calls wait and go in the next. */
  maxInFlight?: number;
}

interface Pending {
  method: string;
  def: AnyMethod;
  token: string;
  req: object;
  /** The request serialized, once it is going in a batch of more than one call. */
  bytes?: Buffer;
  deadlineAt: number;
  sender: BatchSender;
  /** The same call made alone (a server that serves no batches). */
  alone: () => Promise<unknown>;
  resolve: (res: unknown) => void;
  reject: (e: unknown) => void;
}

export class CallBatcher {
  private readonly maxCalls: number;
  private readonly maxBytes: number;
  private readonly maxInFlight: number;
  private pending: Pending[] = [];
  private inFlight = 0;
  private scheduled = false;
  /** The server answered UNIMPLEMENTED: it serves no batches, every call goes alone from now on. */
  private unsupported = false;

  constructor(
    private readonly definition: object,
    private readonly allowed: ReadonlySet<string>,
    opts: CallBatcherOptions = {},
  ) {
    this.maxCalls = opts.maxCalls ?? 64;
    this.maxBytes = opts.maxBytes ?? 1 << 20;
    this.maxInFlight = opts.maxInFlight ?? 2;
  }

  /** Calls in no batch yet, and batches out (tests). */
  get queued(): { pending: number; inFlight: number } {
    return { pending: this.pending.length, inFlight: this.inFlight };
  }

  /**
   * `method(req)` with bearer `token`, in the next batch sent through `sender`; resolves with its
   * response or rejects with its RpcError, as the call alone would. `alone` makes the call alone
   * (used when the server serves no batches, and for methods that are not batched).
   */
  call<Res>(sender: BatchSender, method: string, req: object, opts: CallOptions & { token?: string }, alone: () => Promise<Res>): Promise<Res> {
    const def = this.allowed.has(method) ? methodOf(this.definition, method) : undefined;
    if (!def || this.unsupported) return alone();
    return new Promise<Res>((resolve, reject) => {
      this.pending.push({
        method,
        def,
        token: opts.token ?? '',
        req,
        deadlineAt: Date.now() + (opts.deadlineMs ?? DEFAULT_DEADLINE_MS),
        sender,
        alone,
        resolve: resolve as (r: unknown) => void,
        reject,
      });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight || this.pending.length === 0) return;
    this.scheduled = true;
    // Everything called in this turn of the loop goes in one batch.
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < this.maxInFlight && this.pending.length > 0) {
      let bytes = 0;
      let n = 0;
      // A call with none beside it goes alone, and is never serialized here.
      while (this.pending.length > 1 && n < this.pending.length && n < this.maxCalls) {
        const p = this.pending[n] as Pending;
        p.bytes ??= p.def.requestSerialize(p.req);
        const b = p.bytes.length;
        if (n > 0 && bytes + b > this.maxBytes) break;
        bytes += b;
        n++;
      }
      const batch = this.pending.splice(0, Math.max(n, 1));
      this.inFlight++;
      void this.send(batch).finally(() => {
        this.inFlight--;
        this.schedule();
      });
    }
  }

  private async send(batch: Pending[]): Promise<void> {
    const first = batch[0] as Pending;
    // A batch of one is that call alone: no wrapping, no second encoding.
    if (batch.length === 1) return first.alone().then(first.resolve, first.reject);
    const deadlineMs = Math.max(1, Math.min(...batch.map((p) => p.deadlineAt)) - Date.now());
    let res: CallBatchResult__Output;
    try {
      // No token of the batch's own: each call carries its own.
      res = await first.sender.AmCalls(
        { calls: batch.map((p) => ({ method: p.method, token: p.token, request: p.bytes as Buffer })) },
        { deadlineMs, token: '' },
      );
    } catch (e) {
      if (e instanceof RpcError && e.grpcCode === grpc.status.UNIMPLEMENTED) {
        this.unsupported = true;
        for (const p of batch) p.alone().then(p.resolve, p.reject);
        return;
      }
      // The batch failed as a whole (the master unreachable, a standby's redirect): so did each call.
      for (const p of batch) p.reject(e instanceof RpcError ? new RpcError(e.code, e.message, e.grpcCode, e.details, p.method) : e);
      return;
    }
    for (const [i, p] of batch.entries()) {
      const r = res.results[i];
      if (!r) {
        p.reject(
          new RpcError(
            'INTERNAL',
            `the batch answer has no result for call ${i} (${res.results.length} results for ${batch.length} calls)`,
            grpc.status.INTERNAL,
            {},
            p.method,
          ),
        );
        continue;
      }
      if (r.code) {
        p.reject(fromBatchedError(r, p.method));
        continue;
      }
      try {
        p.resolve(p.def.responseDeserialize(Buffer.from(r.response)));
      } catch (e) {
        p.reject(
          new RpcError('INTERNAL', `cannot decode the ${p.method} answer: ${e instanceof Error ? e.message : String(e)}`, grpc.status.INTERNAL, {}, p.method),
        );
      }
    }
  }
}

/** One batcher per channel (every connection of the process to one server over one transport). */
const batchers = new WeakMap<grpc.Channel, CallBatcher>();

/** The batcher of `sender`'s channel (made on first use). */
export function batcherFor(sender: BatchSender, definition: object, allowed: ReadonlySet<string>): CallBatcher {
  const channel = sender.raw.getChannel() as grpc.Channel;
  let b = batchers.get(channel);
  if (!b) batchers.set(channel, (b = new CallBatcher(definition, allowed)));
  return b;
}
