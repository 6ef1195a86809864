import { expect } from 'chai';
import * as grpc from '@grpc/grpc-js';
import { createRequire } from 'node:module';
import { fuxiFileDescriptorProtos } from '@fuxi/proto';
import { nullLogger } from '@fuxi/common';
import { captureServices, HEALTH_METHODS, methodType, REFLECTION_METHODS } from '../introspection.js';
import { startServer } from '../server.js';

const require = createRequire(import.meta.url);

describe('health and reflection, loaded on first call', () => {
  it('register exactly the methods the libraries implement, with their streaming types', () => {
    const { HealthImplementation } = require('grpc-health-check') as typeof import('grpc-health-check');
    const { ReflectionService } = require('@grpc/reflection') as typeof import('@grpc/reflection');
    const health = new HealthImplementation({});
    const reflection = new ReflectionService({ 'fuxi.v1': { fileDescriptorProtos: fuxiFileDescriptorProtos() } } as never);
    for (const [declared, addToServer] of [
      [HEALTH_METHODS, (s: grpc.Server) => health.addToServer(s)],
      [REFLECTION_METHODS, (s: grpc.Server) => reflection.addToServer(s)],
    ] as const) {
      const got = [...captureServices(addToServer)].map(([path, m]) => [path, methodType(m.method)]);
      expect(got).to.have.deep.members(declared.map(([p, t]) => [p, t]));
    }
  });

  it('a status set before the first health call is what the first Check answers', async () => {
    const s = await startServer({ bind: '127.0.0.1:0', services: [], log: nullLogger });
    try {
      s.setServing('NOT_SERVING');
      const { service } = (await import('grpc-health-check')) as { service: grpc.ServiceDefinition };
      const Health = grpc.makeGenericClientConstructor(service, 'Health');
      const h = new Health(s.address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
        check(req: object, cb: (e: Error | null, r: { status: string }) => void): void;
      };
      const check = () => new Promise<string>((resolve, reject) => h.check({ service: '' }, (e, r) => (e ? reject(e) : resolve(r.status))));
      expect(await check()).to.equal('NOT_SERVING');
      s.setServing('SERVING');
      expect(await check()).to.equal('SERVING');
      h.close();
    } finally {
      await s.shutdown(100);
    }
  });
});
