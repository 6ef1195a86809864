/**
 * The certificates of a test or demo cluster: a CA in `dir` and, on demand, a certificate per
 * daemon (`master`; each agent named by its node id) and an `admin` client certificate, made with
 * `fuxi certs` (the openssl binary). Existing files are kept, so a restarted cluster (or daemon)
 * finds the ones it had.
 *
 * ```ts
 * const pki = ClusterPki.create('/tmp/c1/pki');
 * const args = pki.daemonArgs('node-1', 'agent', ['10.0.0.21']); // --tls-ca D/ca.crt --tls-cert D/node-1.crt ...
 * new FuxiClient({ masters, tls: pki.admin() });
 * ```
 */
import { chmodSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { issueCert, makeCa, type CertRole } from '@fuxi/client';
import type { TlsFiles } from '@fuxi/rpc';

/** Every daemon certificate names loopback too: the harness and local peers dial 127.0.0.1. */
const LOOPBACK_IPS = ['127.0.0.1'];
const LOOPBACK_DNS = ['localhost'];

export class ClusterPki {
  private constructor(readonly dir: string) {}

  /** Uses the CA in `dir`, making one when there is none. */
  static create(dir: string): ClusterPki {
    if (!existsSync(join(dir, 'ca.crt'))) makeCa(dir);
    return new ClusterPki(dir);
  }

  get ca(): string {
    return join(this.dir, 'ca.crt');
  }

  /** The files of `name` (made now, signed by the CA, unless they exist): SANs `ips` and `dns` plus loopback. */
  issue(name: string, role: CertRole, ips: readonly string[] = [], dns: readonly string[] = []): TlsFiles {
    const cert = join(this.dir, `${name}.crt`);
    const key = join(this.dir, `${name}.key`);
    if (!existsSync(cert) || !existsSync(key)) {
      issueCert({ dir: this.dir, name, role, ips: [...new Set([...LOOPBACK_IPS, ...ips])], dns: [...new Set([...LOOPBACK_DNS, ...dns])], force: true });
    }
    return { ca: this.ca, cert, key };
  }

  /** The `admin` client certificate (what the CLI of a demo or test uses). */
  admin(): TlsFiles {
    return this.issue('admin', 'admin');
  }

  /**
   * The certificate the job processes of agent `node` present (`<node>-worker`, role `worker`).
   * They run as another user (`workerUser`), so the directory may be traversed and this key and
   * the CA read by anyone on the host: a worker certificate reads other agents' outputs and
   * nothing else (the master refuses it).
   */
  worker(node: string): { cert: string; key: string } {
    const f = this.issue(`${node}-worker`, 'worker');
    chmodSync(this.dir, 0o711);
    chmodSync(this.ca, 0o644);
    chmodSync(f.cert, 0o644);
    chmodSync(f.key, 0o644);
    return { cert: f.cert, key: f.key };
  }

  /** Agent flags for `node`: its own files and its job processes' (`--worker-tls-cert`, `--worker-tls-key`). */
  agentArgs(node: string, ips: readonly string[] = []): string[] {
    const w = this.worker(node);
    return [...tlsArgs(this.issue(node, 'agent', ips)), '--worker-tls-cert', w.cert, '--worker-tls-key', w.key];
  }

  /** The flags that give a daemon its files (`--tls-ca`, `--tls-cert`, `--tls-key`). */
  daemonArgs(name: string, role: CertRole, ips: readonly string[] = []): string[] {
    return tlsArgs(this.issue(name, role, ips));
  }

  /** The environment the `fuxi` CLI needs (`FUXI_TLS_CA`, `FUXI_TLS_CERT`, `FUXI_TLS_KEY`) with the admin certificate. */
  clientEnv(): Record<string, string> {
    return tlsEnv(this.admin());
  }
}

/** Daemon flags for `tls` (or `--insecure` without it). */
export function tlsArgs(tls: TlsFiles | undefined): string[] {
  return tls ? ['--tls-ca', tls.ca, '--tls-cert', tls.cert, '--tls-key', tls.key] : ['--insecure'];
}

/** CLI / SDK environment for `tls` (or `FUXI_INSECURE=1` without it). */
export function tlsEnv(tls: TlsFiles | undefined): Record<string, string> {
  return tls ? { FUXI_TLS_CA: tls.ca, FUXI_TLS_CERT: tls.cert, FUXI_TLS_KEY: tls.key } : { FUXI_INSECURE: '1' };
}
