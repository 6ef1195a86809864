/**
 * Standbys probe the leader's port. A refused connection means its process is gone (a paused or
 * partitioned leader still accepts or times out), so instead of waiting for its lease to expire
 * they revoke it: the election moves on at once. Safety does not depend on this: a wrongly
 * deposed leader is fenced at the store and by epochs, and its watchdog steps it down.
 */
import { connect as tcpConnect } from 'node:net';
import { errorMessage, type Logger } from '@fuxi/common';
import type { EtcdStore, ObservedLeader } from '@fuxi/store';

export interface LeaderProbeOptions {
  etcd: EtcdStore;
  /** This master's own address (never probed). */
  self: string;
  /** The leader as last observed in the election, if any. */
  observed: () => ObservedLeader | undefined;
  /** Whether this process leads (then it probes nobody). */
  leading: () => boolean;
  /** The leader of election key `key` refused a connection (called on every refusal). */
  onRefused?: (key: string) => void;
  log: Logger;
  /** Probe period (default 100 ms); two refusals in a row revoke. */
  periodMs?: number;
}

/** Starts probing; returns the (unref'd) timer to clear on stop. */
export function startLeaderProbe(o: LeaderProbeOptions): NodeJS.Timeout {
  let refused = 0;
  let revokedKey = '';
  let busy = false;
  const timer = setInterval(() => {
    const leader = o.observed();
    if (busy || o.leading() || !leader || leader.value === o.self || leader.key === revokedKey) {
      refused = 0;
      return;
    }
    busy = true;
    void probePort(leader.value, 500)
      .then(async (result) => {
        refused = result === 'refused' ? refused + 1 : 0;
        if (result === 'refused') o.onRefused?.(leader.key);
        if (refused < 2 || o.observed()?.key !== leader.key) return;
        revokedKey = leader.key;
        const leaseHex = leader.key.slice(leader.key.lastIndexOf('/') + 1);
        o.log.warn({ leader: leader.value, epoch: leader.epoch }, 'leader refuses connections: revoking its lease');
        await o.etcd
          .revokeLease(BigInt(`0x${leaseHex}`).toString())
          .catch((e: unknown) => o.log.warn({ err: errorMessage(e) }, 'could not revoke the leader lease'));
      })
      .finally(() => {
        busy = false;
      });
  }, o.periodMs ?? 100);
  timer.unref();
  return timer;
}

/** Connects to host:port: 'open', 'refused' (nothing listens: the process is gone) or 'timeout'. */
export function probePort(address: string, timeoutMs: number): Promise<'open' | 'refused' | 'timeout'> {
  const i = address.lastIndexOf(':');
  return new Promise((resolve) => {
    const sock = tcpConnect({ host: address.slice(0, i), port: Number(address.slice(i + 1)) });
    const done = (r: 'open' | 'refused' | 'timeout') => {
      sock.destroy();
      resolve(r);
    };
    sock.setTimeout(timeoutMs, () => done('timeout'));
    sock.once('connect', () => done('open'));
    sock.once('error', (e: NodeJS.ErrnoException) => done(e.code === 'ECONNREFUSED' ? 'refused' : 'timeout'));
  });
}
