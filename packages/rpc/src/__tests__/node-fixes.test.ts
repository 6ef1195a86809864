import { expect } from 'chai';
import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { installAsyncResourceBindFix } from '../node-fixes.js';

describe('AsyncResource.prototype.bind (node-fixes.ts)', () => {
  it('is installed where Node gives bound functions a deprecated accessor, and binds as Node does', () => {
    // Node 20's bind defines the accessor on each bound function (two new functions each time).
    const installed = installAsyncResourceBindFix();
    if (process.versions.node.startsWith('20.')) expect(installed).to.equal(true);
    if (installed) {
      const getter = (fn: unknown) => Object.getOwnPropertyDescriptor(fn, 'asyncResource')?.get;
      const r = new AsyncResource('probe');
      expect(getter(r.bind(() => 1))).to.be.a('function');
      expect(getter(r.bind(() => 1))).to.equal(getter(r.bind(() => 2)));
    }

    const als = new AsyncLocalStorage<string>();
    const resource = als.run('scope-of-resource', () => new AsyncResource('test'));
    function f(this: unknown, a: number, b: number) {
      return { self: this, sum: a + b, store: als.getStore() };
    }
    const bound = resource.bind(f);
    expect(bound.length).to.equal(2);
    // Runs in the resource's async scope, with the caller's `this` and arguments.
    const out = als.run('scope-of-caller', () => bound.call('me', 1, 2));
    expect(out).to.deep.equal({ self: 'me', sum: 3, store: 'scope-of-resource' });
    // With thisArg, `this` is fixed.
    const fixed = (resource.bind as (fn: typeof f, thisArg: unknown) => typeof f)(f, 'fixed');
    expect(als.run('other', () => fixed(2, 3))).to.deep.equal({ self: 'fixed', sum: 5, store: 'scope-of-resource' });
    // The deprecated property still names the resource.
    process.noDeprecation = true;
    try {
      expect((bound as unknown as { asyncResource: AsyncResource }).asyncResource).to.equal(resource);
    } finally {
      process.noDeprecation = false;
    }
    // Node's own error for what is not a function.
    expect(() => resource.bind(5 as never))
      .to.throw(TypeError)
      .with.property('code', 'ERR_INVALID_ARG_TYPE');
    // The static form goes through the same method.
    expect(als.run('s', () => AsyncResource.bind(() => als.getStore()))()).to.equal('s');
  });
});
