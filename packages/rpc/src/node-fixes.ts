/**
 * Works around a cost of Node 20 on every gRPC call: Node's HTTP/2 client binds each new stream's
 * start to an `AsyncResource` (`reqAsync.bind(...)` in `ClientHttp2Session.request`), and Node
 * 20's `AsyncResource.prototype.bind` gives every bound function an `asyncResource` accessor made
 * of two fresh `util.deprecate` wrappers (DEP0172), each with its own prototype set: about 8.5 µs a
 * call here, and in a master failover, where a simulated host reopens a thousand calls at once, 80
 * ms of one host's CPU (nodejs/node#58218). Later Node lines dropped the property.
 *
 * `installAsyncResourceBindFix()` (run once when @fuxi/rpc's client loads) replaces that method,
 * only where a bound function has the accessor, with one that behaves the same (the function runs
 * in the resource's async scope with the same `this` and arguments, and has the same `length`) and
 * gives every bound function one shared accessor, which still warns DEP0172 once when read or set.
 *
 * And a cost of every call a TLS server answers: grpc-js names the caller with
 * `socket.getPeerCertificate()` on each call (`getAuthContext`), and Node builds the whole
 * certificate object (subject, issuer, SANs, fingerprints, a copy of its DER bytes) anew each time:
 * 0.1 ms of the 0.7 ms a small call cost the master here. `installPeerCertificateCache()` (run once
 * when @fuxi/rpc's server loads) keeps the first complete answer on the socket and gives it back
 * for the socket's later calls. Only on TLS 1.3 connections: 1.3 has no renegotiation, so the
 * peer's certificate is the one of the handshake for the socket's life (on 1.2 a renegotiation
 * could present another, so 1.2 sockets ask Node each time). `detailed` calls are not cached. The
 * object is shared by the socket's calls: read it, never change it.
 */
import { AsyncResource } from 'node:async_hooks';
import { TLSSocket, type PeerCertificate } from 'node:tls';
import { deprecate } from 'node:util';

const RESOURCE = Symbol('fuxi.asyncResource');

type Fn = (...args: unknown[]) => unknown;
type Bound = Fn & { [RESOURCE]?: AsyncResource };

let installed = false;

/** Whether this Node's `AsyncResource.prototype.bind` is the slow one (it defines `asyncResource`). */
function bindIsSlow(): boolean {
  const bound = new AsyncResource('fuxi-probe').bind(() => undefined);
  return Object.getOwnPropertyDescriptor(bound, 'asyncResource')?.get !== undefined;
}

/** Installs the faster `AsyncResource.prototype.bind` (once; a no-op where Node's is not slow). Returns whether it did. */
export function installAsyncResourceBindFix(): boolean {
  if (installed) return true;
  if (!bindIsSlow()) return false;
  const original = AsyncResource.prototype.bind;
  const warn = deprecate(() => undefined, 'The asyncResource property on bound functions is deprecated', 'DEP0172');
  const accessor: PropertyDescriptor = {
    configurable: true,
    enumerable: true,
    get(this: Bound) {
      warn();
      return this[RESOURCE];
    },
    set(this: Bound, value: AsyncResource) {
      warn();
      this[RESOURCE] = value;
    },
  };
  const boundTo = (resource: AsyncResource, fn: Fn, thisArg: unknown): Fn => {
    const bound: Bound =
      thisArg === undefined
        ? function (this: unknown, ...args: unknown[]) {
            return resource.runInAsyncScope(fn, this, ...args);
          }
        : (Function.prototype.bind.call(resource.runInAsyncScope, resource, fn, thisArg) as Fn);
    Object.defineProperty(bound, 'length', { configurable: true, enumerable: false, writable: false, value: fn.length });
    bound[RESOURCE] = resource;
    Object.defineProperty(bound, 'asyncResource', accessor);
    return bound;
  };
  const bind = function bind(this: AsyncResource, fn: Fn, thisArg?: unknown): Fn {
    // Node's own checks and errors (a fn that is not a function).
    if (typeof fn !== 'function') return (original as (this: AsyncResource, fn: unknown, thisArg?: unknown) => Fn).call(this, fn, thisArg);
    return boundTo(this, fn, thisArg);
  };
  AsyncResource.prototype.bind = bind as typeof AsyncResource.prototype.bind;
  installed = true;
  return true;
}

const PEER_CERTIFICATE = Symbol('fuxi.peerCertificate');

type CachingSocket = TLSSocket & { [PEER_CERTIFICATE]?: PeerCertificate };

let peerCacheInstalled = false;

/** Makes `TLSSocket.prototype.getPeerCertificate()` keep its answer per TLS 1.3 socket (once). */
export function installPeerCertificateCache(): void {
  if (peerCacheInstalled) return;
  const original = TLSSocket.prototype.getPeerCertificate as (this: TLSSocket, detailed?: boolean) => PeerCertificate;
  function getPeerCertificate(this: CachingSocket, detailed?: boolean): PeerCertificate {
    if (detailed === true) return original.call(this, detailed);
    const kept = this[PEER_CERTIFICATE];
    if (kept !== undefined) return kept;
    const cert = original.call(this, detailed);
    // Before the handshake the answer is empty (or null): not kept, the next call asks again.
    if (cert !== null && cert !== undefined && cert.raw !== undefined && this.getProtocol() === 'TLSv1.3') this[PEER_CERTIFICATE] = cert;
    return cert;
  }
  TLSSocket.prototype.getPeerCertificate = getPeerCertificate as typeof TLSSocket.prototype.getPeerCertificate;
  peerCacheInstalled = true;
}
