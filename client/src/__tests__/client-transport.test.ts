import { expect } from 'chai';
import { InvalidArgumentError } from '@fuxi/common';
import { Transport } from '@fuxi/rpc';
import { clientTransport } from '../sdk/fuxi-client.js';
import { cliTransport } from '../cli/program.js';

describe('client transport (TLS on by default)', () => {
  it('the SDK refuses to guess: no tls, no insecure, nothing in the environment -> an error naming tls', () => {
    expect(() => clientTransport({}, {})).to.throw(InvalidArgumentError, /^tls: required/);
    expect(() => clientTransport({ tlsField: '--tls-ca' }, {})).to.throw(/^--tls-ca: required/);
    expect(clientTransport({ insecure: true }, {}).secure).to.equal(false);
    expect(clientTransport({}, { FUXI_INSECURE: '1' }).secure).to.equal(false);
    const given = Transport.insecure();
    expect(clientTransport({ transport: given }, {})).to.equal(given);
  });

  it('the CLI takes flags over the environment; the three files go together', () => {
    expect(cliTransport({}, {})).to.deep.equal({});
    expect(cliTransport({ insecure: true }, {})).to.deep.equal({ insecure: true });
    expect(cliTransport({}, { FUXI_TLS_CA: 'a', FUXI_TLS_CERT: 'b', FUXI_TLS_KEY: 'c' })).to.deep.equal({ tls: { ca: 'a', cert: 'b', key: 'c' } });
    expect(cliTransport({ tlsCert: 'mine' }, { FUXI_TLS_CA: 'a', FUXI_TLS_CERT: 'b', FUXI_TLS_KEY: 'c' })).to.deep.equal({
      tls: { ca: 'a', cert: 'mine', key: 'c' },
    });
    expect(() => cliTransport({ tlsCa: 'a' }, {})).to.throw(InvalidArgumentError, /^--tls-cert: required with the other TLS files/);
    expect(() => cliTransport({ tlsCa: 'a', insecure: true }, {})).to.throw(/^--insecure: give either/);
  });
});
