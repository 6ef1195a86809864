/**
 * A cluster CA and certificates signed by it, made with the `openssl` binary (Debian's `openssl`
 * package). The convention the daemons rely on: subject CN = the identity's name (`master`, an
 * agent's node id, a user), O = its role; server certificates carry the IPs and DNS names their
 * peers dial as SANs. Every certificate may serve and connect (serverAuth and clientAuth).
 *
 * ```ts
 * makeCa('/etc/fuxi/pki');
 * issueCert({ dir: '/etc/fuxi/pki', name: 'node-1', role: 'agent', ips: ['10.0.0.11'], dns: ['host-1'] });
 * // -> /etc/fuxi/pki/node-1.crt, node-1.key (0600), signed by /etc/fuxi/pki/ca.crt
 * ```
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { InvalidArgumentError } from '@fuxi/common';

export const CERT_ROLES = ['master', 'agent', 'admin', 'user', 'worker'] as const;
export type CertRole = (typeof CERT_ROLES)[number];

export interface IssueOptions {
  /** Folder holding ca.crt and ca.key; the new N.crt and N.key go there too. */
  dir: string;
  /** Subject CN: `master`, a node id, a user's name. */
  name: string;
  role: CertRole | string;
  /** IP address SANs (the addresses peers dial). */
  ips?: readonly string[];
  /** DNS name SANs. */
  dns?: readonly string[];
  /** Validity in days (default 825). */
  days?: number;
  /** Replace an existing N.crt / N.key (default: refuse). */
  force?: boolean;
}

export interface IssuedCert {
  cert: string;
  key: string;
  ca: string;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const DNS = /^(?=.{1,253}$)[A-Za-z0-9*]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

function openssl(args: string[], what: string): void {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: Buffer };
    if (err.code === 'ENOENT') throw new Error(`${what}: the openssl binary is not installed (Debian: apt-get install openssl)`);
    throw new Error(`${what}: openssl failed: ${err.stderr?.toString().trim() || err.message}`);
  }
}

function ensureDir(dir: string, field: string): void {
  if (!dir || dir.trim() === '') throw new InvalidArgumentError(field, 'must be a folder path');
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (e) {
    throw new InvalidArgumentError(field, `cannot create ${dir}: ${(e as Error).message}`);
  }
}

/** Makes `dir/ca.crt` and `dir/ca.key` (0600): a self-signed CA (EC P-256, 10 years). Refuses to replace one unless `force`. */
export function makeCa(dir: string, opts: { name?: string; days?: number; force?: boolean } = {}): IssuedCert {
  ensureDir(dir, '--dir');
  const cert = join(dir, 'ca.crt');
  const key = join(dir, 'ca.key');
  if (!opts.force && (existsSync(cert) || existsSync(key)))
    throw new InvalidArgumentError('--dir', `${dir} already has a CA (ca.crt / ca.key); --force replaces it`);
  const name = opts.name ?? 'fuxi-ca';
  if (!NAME.test(name)) throw new InvalidArgumentError('--name', `must be letters, digits, ".", "_" or "-" (at most 64), got ${JSON.stringify(name)}`);
  openssl(
    [
      'req',
      '-x509',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      String(opts.days ?? 3650),
      '-subj',
      `/CN=${name}/O=fuxi`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    'fuxi certs ca',
  );
  chmodSync(key, 0o600);
  return { cert, key, ca: cert };
}

/** Checks the options of `issueCert`; errors name the CLI flag. */
export function checkIssueOptions(o: IssueOptions): void {
  if (!NAME.test(o.name))
    throw new InvalidArgumentError('--name', `must be letters, digits, ".", "_" or "-" (at most 64, not starting with a sign), got ${JSON.stringify(o.name)}`);
  if (!(CERT_ROLES as readonly string[]).includes(o.role))
    throw new InvalidArgumentError('--role', `must be one of ${CERT_ROLES.join(', ')}, got ${JSON.stringify(o.role)}`);
  if (o.role === 'master' && o.name !== 'master')
    throw new InvalidArgumentError('--name', `a master's certificate is named "master", got ${JSON.stringify(o.name)}`);
  for (const ip of o.ips ?? []) if (!isIP(ip)) throw new InvalidArgumentError('--ip', `must be an IPv4 or IPv6 address, got ${JSON.stringify(ip)}`);
  for (const h of o.dns ?? []) if (!DNS.test(h)) throw new InvalidArgumentError('--dns', `must be a DNS name, got ${JSON.stringify(h)}`);
  if (o.days !== undefined && (!Number.isInteger(o.days) || o.days < 1))
    throw new InvalidArgumentError('--days', `must be a positive integer, got ${JSON.stringify(o.days)}`);
}

/** Makes `dir/<name>.crt` and `dir/<name>.key` (0600), signed by `dir/ca.crt`; subject CN=name, O=role. */
export function issueCert(o: IssueOptions): IssuedCert {
  checkIssueOptions(o);
  const ca = join(o.dir, 'ca.crt');
  const caKey = join(o.dir, 'ca.key');
  if (!existsSync(ca) || !existsSync(caKey))
    throw new InvalidArgumentError('--dir', `${o.dir} has no CA (ca.crt and ca.key): run "fuxi certs ca --dir ${o.dir}" first`);
  const cert = join(o.dir, `${o.name}.crt`);
  const key = join(o.dir, `${o.name}.key`);
  if (!o.force && (existsSync(cert) || existsSync(key))) throw new InvalidArgumentError('--name', `${cert} already exists; --force replaces it`);
  const csr = join(o.dir, `.${o.name}.${process.pid}.csr`);
  const ext = join(o.dir, `.${o.name}.${process.pid}.ext`);
  const sans = [...(o.dns ?? []).map((d) => `DNS:${d}`), ...(o.ips ?? []).map((i) => `IP:${i}`)];
  const lines = [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage=serverAuth,clientAuth',
    ...(sans.length ? [`subjectAltName=${sans.join(',')}`] : []),
  ];
  writeFileSync(ext, `${lines.join('\n')}\n`);
  // Written 0600 from the start: the key is never readable by others, even for a moment.
  writeFileSync(key, '', { mode: 0o600 });
  chmodSync(key, 0o600);
  try {
    openssl(
      ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${o.name}/O=${o.role}`],
      'fuxi certs issue',
    );
    openssl(
      [
        'x509',
        '-req',
        '-in',
        csr,
        '-CA',
        ca,
        '-CAkey',
        caKey,
        '-set_serial',
        `0x${randomBytes(12).toString('hex')}`,
        '-days',
        String(o.days ?? 825),
        '-sha256',
        '-extfile',
        ext,
        '-out',
        cert,
      ],
      'fuxi certs issue',
    );
    chmodSync(key, 0o600);
  } finally {
    rmSync(csr, { force: true });
    rmSync(ext, { force: true });
  }
  return { cert, key, ca };
}
