/**
 * grpc.health.v1 on real masters over one real etcd: SERVING only on the leader once recovered;
 * NOT_SERVING on the standby; the standby turns SERVING when it has taken over and recovered.
 */
import * as grpc from '@grpc/grpc-js';
import { expect } from 'chai';
import { nullLogger } from '@fuxi/common';
import { startEtcd, type EtcdProcess } from '@fuxi/store/etcd-fixture';
import { defaultConfig } from '../config.js';
import { MasterServer } from '../master-server.js';

type HealthClient = grpc.Client & { check(req: object, cb: (e: Error | null, r: { status: string }) => void): void };

async function healthOf(address: string): Promise<string> {
  const { service } = (await import('grpc-health-check')) as { service: grpc.ServiceDefinition };
  const Health = grpc.makeGenericClientConstructor(service, 'Health');
  const h = new Health(address, grpc.credentials.createInsecure()) as unknown as HealthClient;
  try {
    return await new Promise<string>((resolve, reject) => h.check({ service: 'fuxi.v1.MasterService' }, (e, r) => (e ? reject(e) : resolve(r.status))));
  } finally {
    h.close();
  }
}

async function until(what: string, fn: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('master: grpc.health.v1 tells the truth (real etcd, leader and standby)', function () {
  this.timeout(90_000);
  let etcd: EtcdProcess;
  const masters: MasterServer[] = [];

  before(async () => {
    etcd = await startEtcd();
  });
  after(async () => {
    for (const m of masters.splice(0)) await m.stop().catch(() => undefined);
    await etcd?.stop();
  });

  it('SERVING on the recovered leader, NOT_SERVING on the standby, and the standby takes it over', async () => {
    const cfg = {
      ...defaultConfig(['true']),
      listen: '127.0.0.1:0',
      store: 'etcd' as const,
      etcdEndpoints: [etcd.endpoint],
      etcdPrefix: `/health-${process.pid}/`,
      leaseTtlSec: 3,
      recoveryDeadlineMs: 1000,
    };
    const a = new MasterServer(cfg, nullLogger);
    masters.push(a);
    await a.start();
    await until('a leads and has recovered', async () => (await healthOf(a.address)) === 'SERVING');
    const b = new MasterServer(cfg, nullLogger);
    masters.push(b);
    await b.start();
    await new Promise((r) => setTimeout(r, 1000));
    expect(await healthOf(b.address), 'a standby').to.equal('NOT_SERVING');
    expect(await healthOf(a.address)).to.equal('SERVING');
    await a.stop();
    await until('b leads and has recovered', async () => (await healthOf(b.address)) === 'SERVING');
  });
});
