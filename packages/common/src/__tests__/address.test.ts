import { expect } from 'chai';
import { hostOf, isLoopbackHost, loopbackAdvertiseProblem, portOf } from '../address.js';

describe('addresses', () => {
  it('takes the host and port of host:port, IPv6 literals and etcd URLs', () => {
    expect(hostOf('10.0.0.5:7070')).to.equal('10.0.0.5');
    expect(hostOf('[::1]:7070')).to.equal('::1');
    expect(hostOf('http://127.0.0.1:2379')).to.equal('127.0.0.1');
    expect(hostOf('m1.rack-a.example:7070')).to.equal('m1.rack-a.example');
    expect(portOf('m1:7070')).to.equal(7070);
    expect(portOf('m1')).to.equal(undefined);
    // A routed address (an AM on its AM host's server): the route is not part of host or port.
    expect(hostOf('10.0.0.5:40123#job-1/2')).to.equal('10.0.0.5');
    expect(hostOf('[::1]:40123#a%3Ab/1')).to.equal('::1');
    expect(portOf('10.0.0.5:40123#job-1/2')).to.equal(40123);
  });

  it('knows loopback hosts', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1']) expect(isLoopbackHost(h), h).to.equal(true);
    for (const h of ['10.213.0.11', 'm1', '0.0.0.0', '128.0.0.1']) expect(isLoopbackHost(h), h).to.equal(false);
  });

  it('names the key when a loopback address would be given to peers on other hosts', () => {
    expect(loopbackAdvertiseProblem('advertise', '127.0.0.1:7071', ['127.0.0.1:7070'])).to.equal(undefined);
    expect(loopbackAdvertiseProblem('advertise', '10.0.0.2:7071', ['10.0.0.1:7070'])).to.equal(undefined);
    const p = loopbackAdvertiseProblem('advertise', '127.0.0.1:7071', ['127.0.0.1:7070', '10.0.0.1:7070']);
    expect(p).to.match(/^advertise: 127\.0\.0\.1:7071 is a loopback address, but peers are on other hosts \(10\.0\.0\.1:7070\)/);
  });
});
