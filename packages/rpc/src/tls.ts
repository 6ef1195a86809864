/**
 * Transport security: mutual TLS between every daemon, AM and client, or plaintext only when a
 * configuration says `insecure: true`.
 *
 * One config shape everywhere (master/agent YAML, the CLI's flags and env, the SDK's options):
 * `tls: { ca, cert, key }` (PEM file paths) or `insecure: true`. A `Transport` made from it gives
 * the server and channel credentials; certificates are re-read when their files change (grpc-js
 * `FileWatcherCertificateProvider`) and at once on `reload()` (SIGHUP in the daemons).
 *
 * Certificate convention: subject CN = the identity's name (`master`, an agent's node id, a
 * user's name), O = its role (`master`, `agent`, `admin`, `user`); a server certificate carries
 * the DNS names and IP addresses its peers dial as SANs.
 *
 * ```ts
 * const transport = Transport.from(resolveTransport({ tls: cfg.tls, insecure: cfg.insecure }));
 * setDefaultTransport(transport); // connect() and startServer() use it unless given another
 * const who = peerIdentity(call); // { name: 'node-1', role: 'agent', sans: ['IP:127.0.0.1'] }
 * ```
 */
import * as grpc from '@grpc/grpc-js';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { PeerCertificate } from 'node:tls';
import { hostOf, InvalidArgumentError, isLoopbackHost, isWildcardHost, type Logger } from '@fuxi/common';

/** PEM files of a TLS identity and the CA that signs its peers. */
export interface TlsFiles {
  /** CA certificate(s): peers must present a certificate it signed. */
  ca: string;
  /** This process's certificate (server and client). */
  cert: string;
  /** Its private key. */
  key: string;
  /** How often the files are re-read for changes (default 5000 ms). */
  reloadMs?: number;
}

/** What every daemon and client is configured with: TLS files, or an explicit opt-out. */
export interface TransportConfig {
  tls?: TlsFiles | undefined;
  insecure?: boolean | undefined;
}

/** Who is at the other end of a call, from its verified certificate. */
export interface PeerIdentity {
  /** Subject CN: `master`, an agent's node id, a user's name. */
  name: string;
  /** Subject O: `master`, `agent`, `admin`, `user`. */
  role?: string;
  /** Subject alternative names, e.g. `DNS:localhost`, `IP:127.0.0.1`. */
  sans: string[];
}

export const DEFAULT_RELOAD_MS = 5000;

const TLS_KEYS = ['ca', 'cert', 'key', 'reloadMs'] as const;

/** Validates a raw `tls` setting (`{ca, cert, key}`); errors name `<field>.<key>`. */
export function parseTlsConfig(field: string, v: unknown): TlsFiles {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new InvalidArgumentError(field, 'must be a mapping {ca, cert, key} of PEM file paths');
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!(TLS_KEYS as readonly string[]).includes(k)) throw new InvalidArgumentError(`${field}.${k}`, `unknown field (known: ${TLS_KEYS.join(', ')})`);
  }
  const path = (k: 'ca' | 'cert' | 'key'): string => {
    const p = o[k];
    if (typeof p !== 'string' || p.trim() === '') throw new InvalidArgumentError(`${field}.${k}`, `must be the path of a PEM file, got ${JSON.stringify(p)}`);
    return p;
  };
  const out: TlsFiles = { ca: path('ca'), cert: path('cert'), key: path('key') };
  if (o.reloadMs !== undefined) {
    const n = Number(o.reloadMs);
    if (!Number.isInteger(n) || n < 10) throw new InvalidArgumentError(`${field}.reloadMs`, `must be an integer >= 10 (ms), got ${JSON.stringify(o.reloadMs)}`);
    out.reloadMs = n;
  }
  return out;
}

/** Parses an `insecure` setting (true/false, "true"/"false", "1"/"0"). */
export function parseInsecure(field: string, v: unknown): boolean {
  if (v === true || v === 'true' || v === '1') return true;
  if (v === false || v === 'false' || v === '0' || v === '') return false;
  throw new InvalidArgumentError(field, `must be true or false, got ${JSON.stringify(v)}`);
}

/**
 * TLS on by default: the config must have `tls` or `insecure: true` (not both). The error names
 * `field` (`tls`, or the CLI's `--tls-ca`).
 */
export function resolveTransport(cfg: TransportConfig, field = 'tls'): TransportConfig {
  if (cfg.insecure && cfg.tls) throw new InvalidArgumentError(field, 'give either tls {ca, cert, key} or insecure: true, not both');
  if (cfg.insecure) return { insecure: true };
  if (!cfg.tls) throw new InvalidArgumentError(field, 'required: {ca, cert, key} PEM files for mutual TLS (or insecure: true for plaintext)');
  return { tls: cfg.tls };
}

/** TLS settings from the environment (`FUXI_TLS_CA`, `FUXI_TLS_CERT`, `FUXI_TLS_KEY`, `FUXI_INSECURE=1`). */
export function transportFromEnv(env: NodeJS.ProcessEnv = process.env): TransportConfig {
  const out: TransportConfig = {};
  if (env.FUXI_INSECURE !== undefined && env.FUXI_INSECURE !== '') out.insecure = parseInsecure('FUXI_INSECURE', env.FUXI_INSECURE);
  const ca = env.FUXI_TLS_CA;
  const cert = env.FUXI_TLS_CERT;
  const key = env.FUXI_TLS_KEY;
  if (ca || cert || key) {
    const missing = (
      [
        ['FUXI_TLS_CA', ca],
        ['FUXI_TLS_CERT', cert],
        ['FUXI_TLS_KEY', key],
      ] as const
    ).find(([, v]) => !v);
    if (missing) throw new InvalidArgumentError(missing[0], 'must be set too (FUXI_TLS_CA, FUXI_TLS_CERT and FUXI_TLS_KEY go together)');
    out.tls = { ca: ca!, cert: cert!, key: key! };
  }
  return out;
}

/** The environment that hands a transport config to a child process (file paths only, never key material). */
export function transportEnv(cfg: TransportConfig): Record<string, string> {
  if (cfg.tls) return { FUXI_TLS_CA: cfg.tls.ca, FUXI_TLS_CERT: cfg.tls.cert, FUXI_TLS_KEY: cfg.tls.key, FUXI_INSECURE: '' };
  return { FUXI_INSECURE: cfg.insecure ? '1' : '', FUXI_TLS_CA: '', FUXI_TLS_CERT: '', FUXI_TLS_KEY: '' };
}

function readPem(field: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new InvalidArgumentError(field, `cannot read ${path}: ${(e as Error).message}`);
  }
}

/** A certificate subject's attributes in order (`[['O', 'agent'], ['CN', 'n1']]`), from node:crypto's `subject`. */
export function subjectAttributes(subject: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const line of subject.split('\n')) {
    const i = line.indexOf('=');
    if (i > 0) out.push([line.slice(0, i), line.slice(i + 1)]);
  }
  return out;
}

/** The name, role and SANs a certificate states (CN, O, subjectAltName). */
export function certificateIdentity(cert: X509Certificate | string | Buffer): PeerIdentity {
  const x = cert instanceof X509Certificate ? cert : new X509Certificate(cert);
  const fields = new Map(subjectAttributes(x.subject));
  return withRole(fields.get('CN') ?? '', fields.get('O'), splitSans(x.subjectAltName));
}

function withRole(name: string, role: string | undefined, sans: string[]): PeerIdentity {
  return role ? { name, role, sans } : { name, sans };
}

function splitSans(s: string | undefined): string[] {
  return (s ?? '')
    .split(',')
    .map((x) => x.trim().replace(/^IP Address:/, 'IP:'))
    .filter((x) => x !== '');
}

/** Reads and checks the files at start: each readable PEM, the key the certificate's. Errors name `<field>.<key>`. */
export function checkTlsFiles(files: TlsFiles, field = 'tls'): PeerIdentity {
  return readTlsFiles(files, field).identity;
}

/** The PEM files as read and checked (checkTlsFiles), with the identity the certificate states. */
interface TlsMaterial {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
  identity: PeerIdentity;
}

function readTlsFiles(files: TlsFiles, field: string): TlsMaterial {
  const ca = readPem(`${field}.ca`, files.ca);
  const cert = readPem(`${field}.cert`, files.cert);
  const key = readPem(`${field}.key`, files.key);
  try {
    new X509Certificate(ca);
  } catch (e) {
    throw new InvalidArgumentError(`${field}.ca`, `${files.ca} is not a PEM certificate: ${(e as Error).message}`);
  }
  let x: X509Certificate;
  try {
    x = new X509Certificate(cert);
  } catch (e) {
    throw new InvalidArgumentError(`${field}.cert`, `${files.cert} is not a PEM certificate: ${(e as Error).message}`);
  }
  let k;
  try {
    k = createPrivateKey(key);
  } catch (e) {
    throw new InvalidArgumentError(`${field}.key`, `${files.key} is not a PEM private key: ${(e as Error).message}`);
  }
  if (!x.checkPrivateKey(k)) throw new InvalidArgumentError(`${field}.key`, `${files.key} is not the key of ${files.cert}`);
  return { ca, cert, key, identity: certificateIdentity(x) };
}

type CaListener = grpc.experimental.CaCertificateUpdateListener;
type IdListener = grpc.experimental.IdentityCertificateUpdateListener;

/**
 * A certificate provider over grpc-js's `FileWatcherCertificateProvider` (files re-read every
 * `reloadMs`) that `reload()` can make re-read now: it swaps in a fresh watcher, which reads the
 * files at once, and moves its listeners over. A re-read that fails keeps the last good files'
 * certificates (the watcher alone would drop them and refuse every connection).
 */
export class ReloadingCertificateProvider implements grpc.experimental.CertificateProvider {
  private inner: grpc.experimental.FileWatcherCertificateProvider;
  private readonly ca = new Set<CaListener>();
  private readonly id = new Set<IdListener>();
  /** The latest updates, replayed to a listener added later (as the watcher does). */
  private lastCa: grpc.experimental.CaCertificateUpdate | null | undefined;
  private lastId: grpc.experimental.IdentityCertificateUpdate | null | undefined;
  // A re-read that fails (a file missing for a moment) keeps the certificates in use. A re-read
  // that finds the same bytes is no update: the watcher reports every read (each 5 s), and every
  // update rebuilds the TLS context of every server and channel using the provider (an AM host
  // with hundreds of AMs, each with its own server, spent about a fifth of its CPU on it).
  private readonly onCa: CaListener = (u) => {
    if (!u && this.lastCa) return;
    if (u && this.lastCa && u.caCertificate.equals(this.lastCa.caCertificate)) return;
    this.lastCa = u;
    for (const l of this.ca) l(u);
  };
  private readonly onId: IdListener = (u) => {
    if (!u && this.lastId) return;
    if (u && this.lastId && u.certificate.equals(this.lastId.certificate) && u.privateKey.equals(this.lastId.privateKey)) return;
    this.lastId = u;
    if (u) this.markLoaded();
    for (const l of this.id) l(u);
  };
  private markLoaded!: () => void;
  /** Resolves once the files were first read (a server serves from then on). */
  readonly loaded = new Promise<void>((resolve) => (this.markLoaded = resolve));

  constructor(private readonly files: TlsFiles) {
    this.inner = this.watcher();
  }

  private watcher(): grpc.experimental.FileWatcherCertificateProvider {
    return new grpc.experimental.FileWatcherCertificateProvider({
      caCertificateFile: this.files.ca,
      certificateFile: this.files.cert,
      privateKeyFile: this.files.key,
      refreshIntervalMs: this.files.reloadMs ?? DEFAULT_RELOAD_MS,
    });
  }

  /** Re-reads the files now (the old watcher stops). */
  reload(): void {
    const old = this.inner;
    this.inner = this.watcher();
    if (this.ca.size) this.inner.addCaCertificateListener(this.onCa);
    if (this.id.size) this.inner.addIdentityCertificateListener(this.onId);
    old.removeCaCertificateListener(this.onCa);
    old.removeIdentityCertificateListener(this.onId);
  }

  addCaCertificateListener(l: CaListener): void {
    this.ca.add(l);
    if (this.ca.size === 1) this.inner.addCaCertificateListener(this.onCa);
    // Replayed: a re-read of the same bytes is dropped (onCa), so a listener gets the files it
    // missed from here.
    if (this.lastCa !== undefined) process.nextTick(l, this.lastCa);
  }
  removeCaCertificateListener(l: CaListener): void {
    this.ca.delete(l);
    if (this.ca.size === 0) this.inner.removeCaCertificateListener(this.onCa);
  }
  addIdentityCertificateListener(l: IdListener): void {
    this.id.add(l);
    if (this.id.size === 1) this.inner.addIdentityCertificateListener(this.onId);
    if (this.lastId !== undefined) process.nextTick(l, this.lastId);
  }
  removeIdentityCertificateListener(l: IdListener): void {
    this.id.delete(l);
    if (this.id.size === 0) this.inner.removeIdentityCertificateListener(this.onId);
  }
}

/** How a Transport made from TLS files (`Transport.from`) keeps its certificates. */
export interface TransportOptions {
  /**
   * Re-read the files when they change and on `reload()` (default): what a process that runs for
   * days needs, as certificates are renewed under it. `false`: the files as read when it was made,
   * for a process that makes a few calls and exits (a `fuxi` command): its first call then neither
   * waits for a file watcher's first read nor starts the file-system threads that read.
   */
  watch?: boolean;
}

/** Server and channel credentials of one process: mutual TLS from files, or plaintext. */
export class Transport {
  private channelCreds: grpc.ChannelCredentials | undefined;
  private constructor(
    readonly config: TransportConfig,
    private readonly provider: ReloadingCertificateProvider | undefined,
    /** This process's own certificate identity (TLS), for logs. */
    readonly identity: PeerIdentity | undefined,
    /** The files as read at start, when they are not watched (`watch: false`). */
    private readonly fixed?: TlsMaterial,
  ) {}

  /** Plaintext (`insecure: true`). */
  static insecure(): Transport {
    return new Transport({ insecure: true }, undefined, undefined);
  }

  /** From a resolved config (`resolveTransport`); TLS files are checked now (errors name `field`). */
  static from(cfg: TransportConfig, field = 'tls', opts: TransportOptions = {}): Transport {
    const r = resolveTransport(cfg, field);
    if (!r.tls) return Transport.insecure();
    const material = readTlsFiles(r.tls, field);
    if (opts.watch === false) return new Transport(r, undefined, material.identity, material);
    return new Transport(r, new ReloadingCertificateProvider(r.tls), material.identity);
  }

  get secure(): boolean {
    return this.provider !== undefined || this.fixed !== undefined;
  }

  serverCredentials(): grpc.ServerCredentials {
    if (this.fixed) return grpc.ServerCredentials.createSsl(this.fixed.ca, [{ private_key: this.fixed.key, cert_chain: this.fixed.cert }], true);
    if (!this.provider) return grpc.ServerCredentials.createInsecure();
    // One provider for both roles: it serves the CA and the identity.
    return grpc.experimental.createCertificateProviderServerCredentials(this.provider, this.provider, true);
  }

  channelCredentials(): grpc.ChannelCredentials {
    if (!this.provider && !this.fixed) return grpc.credentials.createInsecure();
    quietIpServerNameWarning();
    // One credentials object per process, so grpc-js can share subchannels between clients.
    if (this.fixed) this.channelCreds ??= grpc.credentials.createSsl(this.fixed.ca, this.fixed.key, this.fixed.cert);
    else this.channelCreds ??= reuseSecureContext(grpc.experimental.createCertificateProviderChannelCredentials(this.provider!, this.provider!));
    return this.channelCreds;
  }

  /**
   * Resolves once a server or channel using it has its certificates read (at most `timeoutMs`);
   * a server that starts to serve before that refuses connections for a moment.
   */
  async ready(timeoutMs = 5000): Promise<void> {
    if (!this.provider) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.provider.loaded, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
  }

  /** Re-reads the certificate files now (new connections see them; open ones keep theirs). Nothing when they are not watched. */
  reload(): void {
    this.provider?.reload();
  }

  /** What to log about it: never key material. */
  describe(): Record<string, unknown> {
    if (!this.config.tls) return { tls: false };
    return { tls: true, ca: this.config.tls.ca, cert: this.config.tls.cert, name: this.identity?.name, role: this.identity?.role };
  }
}

let quieted = false;

/**
 * grpc-js sends the dialed host as the TLS server name (SNI) even when it is an IP address, and
 * Node warns about that once per process (DEP0123) on stderr, into every CLI run. Our servers use
 * no SNI and the certificate is still checked against the IP (its SAN), so only that one warning
 * is dropped; every other warning is emitted as before.
 */
function quietIpServerNameWarning(): void {
  if (quieted) return;
  quieted = true;
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const code = typeof rest[0] === 'object' && rest[0] !== null ? (rest[0] as { code?: string }).code : rest[1];
    if (code === 'DEP0123') return;
    emit(warning, ...rest);
  }) as typeof process.emitWarning;
}

const shared = new Map<string, Transport>();

/**
 * One transport per distinct config in this process (many AMs of one AM host share their agent's
 * files, and so one file watcher).
 */
export function sharedTransport(cfg: TransportConfig, field = 'tls'): Transport {
  const key = JSON.stringify(resolveTransport(cfg, field));
  let t = shared.get(key);
  if (!t) {
    t = Transport.from(cfg, field);
    shared.set(key, t);
  }
  return t;
}

let processDefault: Transport | undefined;

/** The transport `connect()` and `startServer()` use when given none: set by each daemon's main at start. */
export function setDefaultTransport(t: Transport | undefined): void {
  processDefault = t;
}

/** The process's transport; plaintext when no daemon main set one (in-process tests). */
export function defaultTransport(): Transport {
  return processDefault ?? (plaintext ??= Transport.insecure());
}
let plaintext: Transport | undefined;

/** True when a daemon main (or a client) set the process transport. */
export function hasDefaultTransport(): boolean {
  return processDefault !== undefined;
}

/**
 * The one loud line a plaintext daemon logs when it listens beyond loopback; undefined when it
 * uses TLS or stays on loopback.
 */
export function insecureListenWarning(transport: Transport, bind: string): string | undefined {
  if (transport.secure) return undefined;
  const host = hostOf(bind).replace(/^\[(.*)\]$/, '$1');
  if (isLoopbackHost(host)) return undefined;
  const where = isWildcardHost(host) ? 'every interface' : host;
  return `INSECURE: TLS is off (insecure: true) and this daemon listens on ${where}: anyone who reaches ${bind} can act as any agent, AM or admin`;
}

/** Reloads the certificates on SIGHUP (once per process, for the process transport). */
export function reloadOnSighup(transport: Transport, log: Logger): void {
  if (!transport.secure) return;
  process.on('SIGHUP', () => {
    transport.reload();
    log.info(transport.describe(), 'certificates reloaded (SIGHUP)');
  });
}

/**
 * grpc-js builds a new TLS secure context (parsing the CA, the certificate and the key) for every
 * connection a channel makes, and once more while waiting for it: about 3 ms of CPU each, which an
 * agent pays for every AM it sends worker events to. The context depends only on the provider's
 * newest certificates, so it is built once per update and reused; a reload (new update objects)
 * builds the next one. Guarded: if grpc-js changes the internal method, nothing is patched.
 */
function reuseSecureContext(creds: grpc.ChannelCredentials): grpc.ChannelCredentials {
  type Impl = { getLatestSecureContext?: () => unknown; latestCaUpdate?: unknown; latestIdentityUpdate?: unknown };
  const impl = creds as unknown as Impl;
  const build = impl.getLatestSecureContext;
  if (typeof build !== 'function') return creds;
  let cached: { ca: unknown; id: unknown; ctx: unknown } | undefined;
  impl.getLatestSecureContext = function (this: Impl) {
    if (cached && cached.ca === this.latestCaUpdate && cached.id === this.latestIdentityUpdate) return cached.ctx;
    const ctx = build.call(this);
    cached = ctx ? { ca: this.latestCaUpdate, id: this.latestIdentityUpdate, ctx } : undefined;
    return ctx;
  };
  return creds;
}

/**
 * The verified certificate of a call's peer: CN as `name`, O as `role`, and its SANs; undefined
 * for a plaintext call.
 */
export function peerIdentity(call: { getAuthContext?: () => { sslPeerCertificate?: PeerCertificate } }): PeerIdentity | undefined {
  const cert = call?.getAuthContext?.().sslPeerCertificate;
  if (!cert || !cert.subject || Object.keys(cert).length === 0) return undefined;
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const name = first(cert.subject.CN) ?? '';
  return withRole(name, first(cert.subject.O), splitSans(cert.subjectaltname));
}
