/**
 * Many callers' unary calls of one service carried in one call: an AM host's hosted AMs each make
 * a handful of master calls per job (`MasterService.AmCalls`) and a StartWorkers per node they run
 * on (`AgentService.Calls`), an agent sends each AM its worker events and the master sends each
 * AM host's AMs their assignments (`AppMasterService.Calls`), and each call alone costs about as
 * much CPU in gRPC, HTTP/2 and TLS on both ends as the work it asks for. Batched, every entry keeps what makes it that caller's call: its method, its request,
 * its own bearer token (the AM attempt's), its route on a server of many (routing.ts), and its own
 * answer or error. The server side runs each entry through the very handler (authorization and
 * all) a call alone would reach.
 *
 * Both messages stay within the process's message limit (message-size.ts): the client counts the
 * requests it puts in a batch, and the server counts the answers. It runs the entries while its
 * answer has room for what each one's method answers, and answers the rest, unrun, with
 * RESOURCE_EXHAUSTED (`BATCH_ANSWER_RESOURCE`); the client sends those again in its next batch.
 * Many RegisterApp answers of a job spec near 1 MiB each no longer make an answer too large to
 * send after every call in it took effect.
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
 * // a server of many instances (routing.ts): each entry to the handlers of its route
 * new ServiceRouter(AppMasterService, { batch: { method: 'Calls', allowed: AM_SERVER_BATCHED } })
 * ```
 */
import * as grpc from '@grpc/grpc-js';
import type { MethodDefinition } from '@grpc/proto-loader';
import type { BatchedResult, CallBatch, CallBatchResult, CallBatchResult__Output, CallBatch__Output } from '@fuxi/proto';
import { InvalidArgumentError, ResourceExhaustedError, UnavailableError } from '@fuxi/common';
import { batchedErrorOf, fromBatchedError, fromGrpcError, RpcError } from './errors.js';
import { tokenMetadata } from './auth.js';
import { DEFAULT_DEADLINE_MS, type CallOptions } from './client.js';
import type { HandlerObserver } from './server.js';
import { splitRoute } from './route-address.js';
import { maxMessageBytes } from './message-size.js';

type AnyMethod = MethodDefinition<object, object, object, object>;

/** The unary methods a batch may carry (MasterService.AmCalls): the AM's own calls that change state. */
export const AM_BATCHED: ReadonlySet<string> = new Set(['RegisterApp', 'UpdateRequests', 'ReturnSlots', 'ReportAppState', 'FinishApp', 'SaveAppSnapshot']);

/** What AMs (and the master, launching AMs) may batch to an agent (AgentService.Calls). */
export const AGENT_BATCHED: ReadonlySet<string> = new Set(['StartWorkers', 'StopWorkers']);

/** What an agent may batch to the AMs of a server (AppMasterService.Calls). */
export const WORKER_EVENTS_BATCHED: ReadonlySet<string> = new Set(['WorkerEvents']);

/**
 * What the master may batch to the AMs of a server (AppMasterService.Calls): the assignment pushes
 * of AMs with no WatchAssignments stream open (an AM host's inline AMs open none).
 */
export const ASSIGNMENTS_BATCHED: ReadonlySet<string> = new Set(['UpdateAssignments']);

/** What an AM's server (its own, or an AM host's router) takes in a `Calls` batch: agents' and the master's. */
export const AM_SERVER_BATCHED: ReadonlySet<string> = new Set([...WORKER_EVENTS_BATCHED, ...ASSIGNMENTS_BATCHED]);

/** Bytes a batch entry costs beside its request, method, token and route (field tags and lengths). */
const ENTRY_FRAME_BYTES = 16;
/** Bytes of a batch message beside its entries (its own framing, the call's headers), kept free under the message limit. */
const BATCH_FRAME_BYTES = 4096;

/** DEADLINE_EXCEEDED for a batched call of `method`, as its call alone would fail. */
function deadlineError(method: string, when: string): RpcError {
  return new RpcError('DEADLINE_EXCEEDED', `the call's deadline passed ${when}`, grpc.status.DEADLINE_EXCEEDED, {}, method);
}

/** The method of a service definition, by name. */
function methodOf(definition: object, method: string): AnyMethod | undefined {
  const def = (definition as Record<string, AnyMethod | undefined>)[method];
  return def && !def.responseStream && !def.requestStream ? def : undefined;
}

// ------------------------------------------------------------------ server

/** Calls a batch may carry (the client sends at most 64): a larger one is refused whole, naming `calls`. */
export const MAX_BATCHED_CALLS = 1000;

/**
 * The `resource` of the RESOURCE_EXHAUSTED that answers an entry the server did not run because
 * the batch's answer had no room left for its answer: the client sends it again (`CallBatcher`
 * does, in its next batch, before any later call). Nothing of it took effect.
 */
export const BATCH_ANSWER_RESOURCE = 'batch answer';

/** The answer to an entry that was not run: the batch's answer was full. */
const NOT_RUN: BatchedResult = batchedErrorOf(new ResourceExhaustedError(BATCH_ANSWER_RESOURCE, "not run: the batch's answer is full; send the call again", 0));

/** The answer to an entry that ran but whose answer did not fit beside its neighbours' (its size was not foreseen). */
const UNDELIVERED: BatchedResult = batchedErrorOf(
  new UnavailableError("the call ran, but its answer did not fit in the batch's answer (the message size limit); call it again"),
);

/** Bytes of a length-delimited field of `n` bytes (tag, length as a varint, the bytes). */
function fieldBytes(n: number): number {
  let len = 1;
  for (let v = n; v >= 0x80; v = Math.floor(v / 0x80)) len++;
  return 1 + len + n;
}

/** Bytes `r` takes in an encoded CallBatchResult (as one of its `results`); never less than it does. */
function resultBytes(r: BatchedResult): number {
  // A field that is set is written even when empty (protobufjs), so it is counted then too.
  const str = (v: string | undefined) => (v === undefined ? 0 : fieldBytes(Buffer.byteLength(v)));
  const response = r.response === undefined ? 0 : fieldBytes(typeof r.response === 'string' ? Buffer.byteLength(r.response, 'base64') : r.response.length);
  let n = response + str(r.code) + str(r.message);
  for (const [k, v] of Object.entries(r.details ?? {})) n += fieldBytes(fieldBytes(Buffer.byteLength(k)) + fieldBytes(Buffer.byteLength(v)));
  return fieldBytes(n);
}

/** What an entry holds of its batch's answer before it runs or is answered: room for NOT_RUN or UNDELIVERED. */
const ENTRY_FLOOR_BYTES = Math.max(resultBytes(NOT_RUN), resultBytes(UNDELIVERED));

/** Answers of a method per window of `AnswerSizes`: its estimate is the largest of the last full window's and of this one's. */
const ANSWER_SIZE_WINDOW = 64;

/**
 * The size of each method's answers as this server has seen them lately: the largest of its last
 * 64 to 128 answers, so a method whose answers carry a job spec near 1 MiB holds 1 MiB of its
 * batch's answer while it runs, and one unusually large answer is forgotten after a while.
 */
class AnswerSizes {
  private readonly byMethod = new Map<string, { current: number; previous: number; seen: number }>();

  /** undefined: no answer of `method` seen yet. */
  estimate(method: string): number | undefined {
    const s = this.byMethod.get(method);
    return s && Math.max(s.current, s.previous);
  }

  note(method: string, bytes: number): void {
    let s = this.byMethod.get(method);
    if (!s) this.byMethod.set(method, (s = { current: 0, previous: 0, seen: 0 }));
    s.current = Math.max(s.current, bytes);
    if (++s.seen >= ANSWER_SIZE_WINDOW) {
      s.previous = s.current;
      s.current = 0;
      s.seen = 0;
    }
  }
}

/**
 * The bytes of one batch's answer, which must stay within the message limit: every entry holds
 * room for its answer from the start (at least ENTRY_FLOOR_BYTES: an entry never run is still
 * answered), more while it runs (its method's estimated answer), and exactly its answer once that
 * is known. Held bytes never pass `budget`.
 */
class AnswerRoom {
  private readonly held: number[];
  private reserved: number;

  constructor(
    entries: number,
    private readonly budget: number,
  ) {
    this.held = new Array<number>(entries).fill(ENTRY_FLOOR_BYTES);
    this.reserved = entries * ENTRY_FLOOR_BYTES;
    if (this.reserved > budget)
      throw new InvalidArgumentError(
        'calls',
        `${entries} calls in one batch: their answers cannot fit one message of ${maxMessageBytes()} bytes; send at most ${Math.floor(budget / ENTRY_FLOOR_BYTES)}`,
      );
  }

  /**
   * Lets entry `i` run, holding `estimate` bytes (undefined: unknown, as much as there is), when
   * the answer has room for that; the first entry of a batch to run always may (it is answered
   * as it would be alone).
   */
  admit(i: number, estimate: number | undefined, first: boolean): boolean {
    const held = this.held[i] as number;
    const free = this.budget - this.reserved + held;
    const want = estimate === undefined ? Infinity : Math.max(ENTRY_FLOOR_BYTES, estimate);
    if (want > free && !first) return false;
    const hold = Math.min(want, free);
    this.reserved += hold - held;
    this.held[i] = hold;
    return true;
  }

  /** Entry `i` is not run after all: it holds its floor again. */
  release(i: number): void {
    this.reserved += ENTRY_FLOOR_BYTES - (this.held[i] as number);
    this.held[i] = ENTRY_FLOOR_BYTES;
  }

  /**
   * Entry `i`'s answer: `outcome` when the answer has room for it; else what stands in for it
   * (UNDELIVERED when it ran, NOT_RUN when not), which always fits in what the entry held.
   */
  settle(i: number, outcome: BatchedResult, ran: boolean): BatchedResult {
    const held = this.held[i] as number;
    let r = outcome;
    let size = resultBytes(outcome);
    if (this.reserved - held + size > this.budget) {
      r = ran ? UNDELIVERED : NOT_RUN;
      size = resultBytes(r);
    }
    this.reserved += size - held;
    this.held[i] = size;
    return r;
  }
}

type EntryHandler = (req: object, call: object) => unknown;

/**
 * The handler of a batch call: each entry decoded as its method's request and run by `handlers()`'s
 * function of that method, with a call of its own (its bearer token as the call's metadata; the
 * batch caller's when the entry has none), at once as long as the answer has room for theirs
 * (`runBatch`); answered when every entry is, each with its response or its error. `observe`
 * hears of each entry run as of a call alone (metrics by method).
 */
export function batchedCalls(
  definition: object,
  handlers: () => object,
  allowed: ReadonlySet<string>,
  observe?: HandlerObserver,
): (req: CallBatch__Output, call: grpc.ServerUnaryCall<CallBatch__Output, CallBatchResult>) => Promise<CallBatchResult> {
  const sizes = new AnswerSizes();
  return (req, call) =>
    runBatch(definition, allowed, req, call, observe, sizes, (c, i, request, entryCall) => {
      const fn = (handlers() as Record<string, EntryHandler | undefined>)[c.method];
      if (!fn) throw new InvalidArgumentError(`calls[${i}].method`, `${c.method} is not served here`);
      return Promise.resolve(fn(request, entryCall)) as Promise<object>;
    });
}

/**
 * How long an entry of a routed batch waits for its instance (an AM of a host whose calls come in
 * one batch from an agent) before it fails UNAVAILABLE so that the batch is answered.
 */
export const ROUTED_ENTRY_WAIT_MS = 1000;

/** A server-side handler as `implement()` makes it (a unary one: the call, and its callback). */
type ImplementedUnary = (call: object, cb: (err: grpc.ServiceError | null, res?: object) => void) => void;

/**
 * The handler of a batch call at a server of many instances (routing.ts `ServiceRouter`): each
 * entry goes to the handlers `lookup` finds for its `route` (as `implement()` made them, so in that
 * instance's own wrapping), and fails UNAVAILABLE when nothing serves that route, as a call alone
 * would, or when that instance has not answered within `entryWaitMs`.
 */
export function routedBatchedCalls(
  definition: object,
  lookup: (route: string) => grpc.UntypedServiceImplementation | undefined,
  allowed: ReadonlySet<string>,
  observe?: HandlerObserver,
  entryWaitMs = ROUTED_ENTRY_WAIT_MS,
): (req: CallBatch__Output, call: grpc.ServerUnaryCall<CallBatch__Output, CallBatchResult>) => Promise<CallBatchResult> {
  const sizes = new AnswerSizes();
  return (req, call) =>
    runBatch(definition, allowed, req, call, observe, sizes, (c, i, _request, entryCall) => {
      const fn = lookup(c.route)?.[c.method] as ImplementedUnary | undefined;
      if (!fn) throw new UnavailableError(`calls[${i}]: nothing serves ${c.route === '' ? 'a call without a route' : c.route} here`);
      return new Promise<object>((resolve, reject) => {
        // One stalled instance must not hold its neighbours' answers: its entry fails UNAVAILABLE
        // (retry), and the batch is answered; what its handler does later is its own.
        const timer = setTimeout(() => reject(new UnavailableError(`calls[${i}]: ${c.route} did not answer within ${entryWaitMs} ms; retry`)), entryWaitMs);
        fn(entryCall, (err, res) => {
          clearTimeout(timer);
          if (err) reject(fromGrpcError(err, c.method));
          else resolve(res ?? {});
        });
      });
    });
}

/**
 * Decodes and runs the entries of a batch (`run`), each with a call of its own; one result per
 * entry. The answer stays within the message limit (`AnswerRoom`): the entries start in their
 * order, at once while the answer has room for what their methods answer (`sizes`), else once
 * those running have answered; an entry there is no room for, and every entry after it (a
 * caller's later call must not overtake its earlier one), is not run and answered NOT_RUN, for
 * the client to send again. The first entry always runs: every batch gets on.
 */
async function runBatch(
  definition: object,
  allowed: ReadonlySet<string>,
  req: CallBatch__Output,
  call: grpc.ServerUnaryCall<CallBatch__Output, CallBatchResult>,
  observe: HandlerObserver | undefined,
  sizes: AnswerSizes,
  run: (c: CallBatch__Output['calls'][number], i: number, request: object, entryCall: object) => Promise<object>,
): Promise<CallBatchResult> {
  if (req.calls.length > MAX_BATCHED_CALLS) throw new InvalidArgumentError('calls', `${req.calls.length} calls in one batch; at most ${MAX_BATCHED_CALLS}`);
  const room = new AnswerRoom(req.calls.length, maxMessageBytes() - BATCH_FRAME_BYTES);
  const results = new Array<BatchedResult>(req.calls.length);
  const running = new Set<Promise<void>>();
  let started = 0;
  for (const [i, c] of req.calls.entries()) {
    let service = '';
    let def: AnyMethod;
    let request: object;
    try {
      const d = allowed.has(c.method) ? methodOf(definition, c.method) : undefined;
      if (!d) throw new InvalidArgumentError(`calls[${i}].method`, `${JSON.stringify(c.method)} cannot be batched; one of ${[...allowed].join(', ')}`);
      def = d;
      service = def.path.split('/')[1] ?? '';
      try {
        request = def.requestDeserialize(Buffer.from(c.request));
      } catch (e) {
        throw new InvalidArgumentError(`calls[${i}].request`, `is not a ${c.method} request: ${e instanceof Error ? e.message : String(e)}`);
      }
    } catch (e) {
      const outcome = batchedErrorOf(e);
      results[i] = room.settle(i, outcome, false);
      if (observe && service) observe(service, c.method, outcome.code, 0);
      continue;
    }
    // Room in the answer for what this method answers, or wait for the entries running to answer.
    // A method with no answer seen yet runs alone, with all the room the answered entries left
    // (as the first entry of a batch runs with all of it).
    const admit = () => {
      const estimate = sizes.estimate(def.path);
      return room.admit(i, estimate, started === 0 || (estimate === undefined && running.size === 0));
    };
    let admitted = admit();
    while (!admitted && running.size > 0) {
      await Promise.race(running);
      admitted = admit();
    }
    // Nor is anything started once the batch's caller is gone: its answer would reach nobody.
    if (!admitted || call.cancelled) {
      room.release(i);
      for (let j = i; j < req.calls.length; j++) results[j] = NOT_RUN;
      break;
    }
    started++;
    // A call of its own: its token, its request; everything else (the peer, its certificate,
    // cancellation) is the batch call's.
    const entryCall = Object.create(call, {
      metadata: { value: c.token ? tokenMetadata(c.token) : call.metadata },
      request: { value: request },
    }) as object;
    const start = process.hrtime.bigint();
    const entry = (async () => {
      let outcome: BatchedResult;
      try {
        const res = await run(c, i, request, entryCall);
        outcome = { response: def.responseSerialize(res) };
      } catch (e) {
        outcome = batchedErrorOf(e);
      }
      sizes.note(def.path, resultBytes(outcome));
      results[i] = room.settle(i, outcome, true);
      if (observe) observe(service, c.method, outcome.code || 'OK', Number(process.hrtime.bigint() - start) / 1e9);
    })();
    running.add(entry);
    void entry.then(() => running.delete(entry));
  }
  await Promise.all(running);
  return { results };
}

// ------------------------------------------------------------------ client

/** A client that can send a batch (a TypedClient of a service with a batch method: `AmCalls`, `Calls`). */
export interface BatchSender {
  readonly raw: grpc.Client;
  /** The address it calls; a route after its `#` goes with each of its calls in a batch. */
  readonly address?: string;
}

type BatchFn = (req: CallBatch, opts?: CallOptions) => Promise<CallBatchResult__Output>;

export interface CallBatcherOptions {
  /** Calls per batch (default 64). */
  maxCalls?: number;
  /** Request bytes per batch (default 1 MiB; a larger call goes alone). */
  maxBytes?: number;
  /** Batches out at once (default 2): more calls wait and go in the next. */
  maxInFlight?: number;
  /** The service's batch method (default `AmCalls`, MasterService's; `Calls` elsewhere). */
  batchMethod?: string;
}

interface Pending {
  method: string;
  def: AnyMethod;
  token: string;
  route: string;
  req: object;
  /** The request serialized, once it is going in a batch of more than one call. */
  bytes?: Buffer;
  deadlineAt: number;
  /** Failed at its deadline while its batch was out: never sent again. */
  expired?: boolean;
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
  private readonly batchMethod: string;
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
    this.batchMethod = opts.batchMethod ?? 'AmCalls';
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
        route: splitRoute(sender.address ?? '').route ?? '',
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
      // A batch is one message: within this batcher's bytes and the process's message limit, each
      // entry counted with its method, token and route beside its request.
      const budget = Math.min(this.maxBytes, maxMessageBytes() - BATCH_FRAME_BYTES);
      // A call with none beside it goes alone, and is never serialized here.
      while (this.pending.length > 1 && n < this.pending.length && n < this.maxCalls) {
        const p = this.pending[n] as Pending;
        if (!p.bytes) {
          try {
            p.bytes = p.def.requestSerialize(p.req);
          } catch (e) {
            // A request that cannot be encoded fails alone, as its call alone would; the rest go on.
            this.pending.splice(n, 1);
            p.reject(
              new RpcError('INTERNAL', `the request could not be encoded: ${e instanceof Error ? e.message : String(e)}`, grpc.status.INTERNAL, {}, p.method),
            );
            continue;
          }
        }
        const b = p.bytes.length + p.method.length + p.token.length + p.route.length + ENTRY_FRAME_BYTES;
        if (n > 0 && bytes + b > budget) break;
        bytes += b;
        n++;
      }
      if (this.pending.length === 0) break;
      const batch = this.pending.splice(0, Math.max(n, 1));
      this.inFlight++;
      void this.send(batch).finally(() => {
        this.inFlight--;
        this.schedule();
      });
    }
  }

  private async send(taken: Pending[]): Promise<void> {
    // A call whose deadline passed while it waited for its batch fails now, unsent (it never ran).
    const now = Date.now();
    const batch: Pending[] = [];
    for (const p of taken) {
      if (p.deadlineAt > now) batch.push(p);
      else p.reject(deadlineError(p.method, 'while it waited for its batch'));
    }
    const first = batch[0];
    if (!first) return;
    // A batch of one is that call alone: no wrapping, no second encoding.
    if (batch.length === 1) return first.alone().then(first.resolve, first.reject);
    // The batch lives as long as its longest-lived call: a call with a short deadline must not cut
    // its neighbours' short (they would fail together, and be retried, though the server ran them).
    // Each shorter one fails at its own deadline, as it would alone.
    const latest = Math.max(...batch.map((p) => p.deadlineAt));
    const timers = batch.flatMap((p) =>
      p.deadlineAt < latest
        ? [
            setTimeout(() => {
              p.expired = true;
              p.reject(deadlineError(p.method, 'before its batch was answered'));
            }, p.deadlineAt - now),
          ]
        : [],
    );
    try {
      await this.sendBatch(batch, Math.max(1, latest - now));
    } finally {
      for (const t of timers) clearTimeout(t);
    }
  }

  private async sendBatch(batch: Pending[], deadlineMs: number): Promise<void> {
    const first = batch[0] as Pending;
    let res: CallBatchResult__Output;
    try {
      // No token of the batch's own: each call carries its own.
      const send = (first.sender as unknown as Record<string, BatchFn | undefined>)[this.batchMethod];
      if (!send) throw new Error(`the client has no ${this.batchMethod} method`);
      res = await send(
        { calls: batch.map((p) => ({ method: p.method, token: p.token, route: p.route, request: p.bytes as Buffer })) },
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
    // Calls the server did not run because its answer was full: first in the next batch, in their order.
    const again: Pending[] = [];
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
      if (r.code === 'RESOURCE_EXHAUSTED' && r.details.resource === BATCH_ANSWER_RESOURCE) {
        if (!p.expired) again.push(p);
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
    // Sent when this batch is counted out (`flush`); the server runs at least the first call of a batch.
    if (again.length > 0) this.pending.unshift(...again);
  }
}

/** One batcher per channel and service (every connection of the process to one server over one transport). */
const batchers = new WeakMap<grpc.Channel, Map<object, CallBatcher>>();

/** The batcher of `sender`'s channel for `definition`'s service (made on first use). */
export function batcherFor(sender: BatchSender, definition: object, allowed: ReadonlySet<string>, opts: CallBatcherOptions = {}): CallBatcher {
  const channel = sender.raw.getChannel() as grpc.Channel;
  let byService = batchers.get(channel);
  if (!byService) batchers.set(channel, (byService = new Map()));
  let b = byService.get(definition);
  if (!b) byService.set(definition, (b = new CallBatcher(definition, allowed, opts)));
  return b;
}

/**
 * `client[method](req, opts)`, sent in the next batch of `client`'s channel (`opts.batchMethod`,
 * default `Calls`) with the other calls of the process to that server made meanwhile; alone when
 * the method is not among `allowed` or the server serves no batches.
 */
export function callBatched<Res>(
  client: BatchSender,
  definition: object,
  allowed: ReadonlySet<string>,
  method: string,
  req: object,
  opts: CallOptions & { token?: string; batchMethod?: string } = {},
): Promise<Res> {
  const { batchMethod = 'Calls', ...callOpts } = opts;
  const fn = (client as unknown as Record<string, ((r: object, o: CallOptions) => Promise<Res>) | undefined>)[method];
  if (!fn) return Promise.reject(new Error(`the client has no ${method} method`));
  return batcherFor(client, definition, allowed, { batchMethod }).call(client, method, req, callOpts, () => fn(req, callOpts));
}
