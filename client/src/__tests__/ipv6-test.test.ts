import { expect } from 'chai';
import net from 'node:net';
import { installCheapIpv6Test } from '../cli/ipv6-test.js';

describe('cli ipv6-test: net.isIPv6 without its regular expression when there is no colon', () => {
  it('answers as Node does, for addresses of both families and for what is neither', () => {
    // Node's own answer: net.isIP uses its internal test, not the exported function replaced here.
    const node = (s: string) => net.isIP(s) === 6;
    installCheapIpv6Test();
    installCheapIpv6Test(); // once only: not a wrapper of a wrapper
    const inputs = [
      '127.0.0.1',
      '10.0.0.7',
      'localhost',
      'master.rack-a',
      '',
      '::',
      '::1',
      '[::1]',
      'fe80::1',
      'fe80::1%eth0',
      '::ffff:10.0.0.1',
      '2001:db8::8a2e:370:7334',
      '2001:db8:::1',
      '1:2:3:4:5:6:7:8:9',
      'not:an:address',
      '127.0.0.1:7070',
    ];
    for (const s of inputs) expect(net.isIPv6(s), s).to.equal(node(s));
    expect(net.isIPv6('::1')).to.equal(true);
    expect(net.isIPv6('127.0.0.1')).to.equal(false);
  });
});
