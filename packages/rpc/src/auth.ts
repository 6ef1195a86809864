/**
 * Who is calling: the identity behind each RPC, from a bearer token or the peer's certificate.
 *
 * A caller is resolved per call by `callerOf(call, authn)`, in this order:
 * 1. `authorization: Bearer <token>` metadata: a token of the static tokens file (`TokenTable`,
 *    CSV lines `token,name,role[,group...]`), or an application master's attempt token
 *    (`authn.amToken`, the master's lookup); a token neither knows is UNAUTHENTICATED;
 * 2. else the peer's TLS certificate: CN = name, O = role, OU = quota group (`certIdentity`);
 * 3. else anonymous.
 *
 * Callers never see a token in an error or a log line: only its owner's name, or nothing.
 *
 * ```ts
 * const tokens = new TokenFile('/etc/fuxi/tokens.csv', log); // reloads when the file changes
 * const caller = callerOf(call, { insecure: false, tokens: () => tokens.table });
 * // { name: 'alice', role: 'user', groups: ['gold'] }
 * ```
 */
import * as grpc from '@grpc/grpc-js';
import { X509Certificate, createHash, timingSafeEqual } from 'node:crypto';
import * as fs from 'node:fs';
import { InvalidArgumentError, UnauthenticatedError, errorMessage, type Logger } from '@fuxi/common';
import { subjectAttributes } from './tls.js';

export type Role = 'admin' | 'user' | 'master' | 'agent' | 'am' | 'anonymous';

export interface Caller {
  name: string;
  role: Role;
  /** Quota groups the caller may submit into and see the jobs of (absent: any, for a user naming none). */
  groups?: string[];
  /** An application master: its app and attempt. */
  appId?: string;
  attempt?: number;
}

export const ANONYMOUS: Caller = Object.freeze({ name: 'anonymous', role: 'anonymous' });

/** Roles a tokens file or a certificate may name (`am` comes only from an attempt token). */
const GRANTABLE: ReadonlySet<Role> = new Set(['admin', 'user', 'master', 'agent']);

export interface TokenEntry {
  name: string;
  role: Role;
  groups: string[];
}

/** The static tokens, by token. */
export type TokenTable = ReadonlyMap<string, TokenEntry>;

/**
 * Parses a static tokens file: one `token,name,role[,group...]` per line; blank lines and lines
 * starting with `#` are skipped. Errors name the line (never the token).
 */
export function parseTokens(text: string): TokenTable {
  const out = new Map<string, TokenEntry>();
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const field = `tokens line ${i + 1}`;
    const cols = line.split(',').map((c) => c.trim().replace(/^"(.*)"$/, '$1'));
    const [token = '', name = '', role = '', ...groups] = cols;
    if (token.length < 16) throw new InvalidArgumentError(field, 'the token must be at least 16 characters');
    if (!name) throw new InvalidArgumentError(field, 'the name is empty');
    if (!GRANTABLE.has(role as Role)) throw new InvalidArgumentError(field, `role "${role}" is not one of admin, user, agent, master`);
    if (out.has(token)) throw new InvalidArgumentError(field, 'the token is listed twice');
    out.set(token, { name, role: role as Role, groups: groups.filter((g) => g !== '') });
  });
  return out;
}

/**
 * A tokens file kept current: read at start (a bad file is an error then), read again when it
 * changes (polled every `pollMs`) or on `reload()` (SIGHUP); a bad file later keeps the last good
 * table and logs why.
 */
export class TokenFile {
  private current: TokenTable;
  private readonly listener = (): void => this.reload();

  constructor(
    readonly path: string,
    private readonly log: Logger,
    pollMs = 1000,
  ) {
    this.current = parseTokens(fs.readFileSync(path, 'utf8'));
    fs.watchFile(path, { interval: pollMs, persistent: false }, this.listener);
    log.info({ path, tokens: this.current.size }, 'tokens file loaded');
  }

  get table(): TokenTable {
    return this.current;
  }

  reload(): void {
    try {
      this.current = parseTokens(fs.readFileSync(this.path, 'utf8'));
      this.log.info({ path: this.path, tokens: this.current.size }, 'tokens file reloaded');
    } catch (e) {
      this.log.error({ path: this.path, err: errorMessage(e) }, 'tokens file not reloaded: keeping the previous tokens');
    }
  }

  close(): void {
    fs.unwatchFile(this.path, this.listener);
  }
}

/**
 * Identities of the certificates seen lately, by their DER bytes: a caller's every call shows the
 * same certificate, and parsing it (X509Certificate) was most of the cost of naming the caller.
 */
const identities = new Map<string, Caller | undefined>();
const IDENTITIES_KEPT = 4096;

/** The identity a certificate names: CN = name, O = role, OU = quota groups; undefined without a CN or a known role. */
export function certIdentity(raw: Buffer): Caller | undefined {
  const key = raw.toString('base64');
  if (!identities.has(key)) {
    if (identities.size >= IDENTITIES_KEPT) identities.clear();
    identities.set(key, parseCertIdentity(raw));
  }
  // A copy: callers may change what they get.
  const id = identities.get(key);
  return id && { ...id, ...(id.groups ? { groups: [...id.groups] } : {}) };
}

function parseCertIdentity(raw: Buffer): Caller | undefined {
  let subject: string;
  try {
    subject = new X509Certificate(raw).subject;
  } catch {
    return undefined;
  }
  const attrs = subjectAttributes(subject);
  const name = attrs.find(([k]) => k === 'CN')?.[1] ?? '';
  const role = attrs.find(([k]) => k === 'O')?.[1] ?? '';
  const groups = attrs.filter(([k]) => k === 'OU').map(([, v]) => v);
  if (!name || !GRANTABLE.has(role as Role)) return undefined;
  return { name, role: role as Role, ...(groups.length > 0 ? { groups } : {}) };
}

/** What resolves callers: the static tokens, the AM attempt tokens (the master's), the mode. */
export interface Authn {
  /** No TLS: anonymous callers are trusted as admins by the authorization tables (an insecure cluster trusts its network). */
  insecure: boolean;
  tokens?: () => TokenTable | undefined;
  /** The app and attempt whose current token this is (the master's table of live attempts). */
  amToken?: (token: string) => { appId: string; attempt: number } | undefined;
}

export const AUTHORIZATION_KEY = 'authorization';

/** The bearer token a call carries, or undefined. */
export function bearerToken(md: grpc.Metadata): string | undefined {
  const v = md.get(AUTHORIZATION_KEY)[0];
  if (typeof v !== 'string') return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(v);
  return m?.[1];
}

/** The hash agents compare an AM's token with (sha-256, hex): agents never hold the token itself. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Compares a token with a hash in constant time. */
export function tokenMatches(token: string, hash: string): boolean {
  const a = Buffer.from(tokenHash(token), 'hex');
  const b = Buffer.from(hash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

type CallLike = { metadata: grpc.Metadata; getAuthContext?: () => { sslPeerCertificate?: { raw?: Buffer } } | undefined };

/** The caller of one RPC (see the module doc); UNAUTHENTICATED for a token nobody issued. */
export function callerOf(call: CallLike, authn: Authn, method = 'call'): Caller {
  const token = bearerToken(call.metadata);
  if (token !== undefined) {
    const entry = authn.tokens?.()?.get(token);
    if (entry) return { name: entry.name, role: entry.role, ...(entry.groups.length > 0 ? { groups: [...entry.groups] } : {}) };
    const am = authn.amToken?.(token);
    if (am) return { name: `am:${am.appId}#${am.attempt}`, role: 'am', appId: am.appId, attempt: am.attempt };
    throw new UnauthenticatedError(method, 'the bearer token is not known here (not in the tokens file, not a live application master attempt)');
  }
  const cert = call.getAuthContext?.()?.sslPeerCertificate;
  if (cert?.raw) {
    const id = certIdentity(cert.raw);
    if (id) return id;
  }
  return ANONYMOUS;
}

/** Reads a token from a file (its first non-empty line, trimmed); errors name the file. */
export function readTokenFile(path: string): string {
  let text: string;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (e) {
    throw new InvalidArgumentError('tokenFile', `cannot read ${path}: ${errorMessage(e)}`);
  }
  const token = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .find((l) => l !== '');
  if (!token) throw new InvalidArgumentError('tokenFile', `${path} holds no token`);
  return token;
}

/** Metadata carrying `token` as the bearer token (none when empty). */
export function tokenMetadata(token: string | undefined): grpc.Metadata {
  const md = new grpc.Metadata();
  if (token) md.set(AUTHORIZATION_KEY, `Bearer ${token}`);
  return md;
}
