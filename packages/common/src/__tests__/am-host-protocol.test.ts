import { expect } from 'chai';
import { encodeLine, LineDecoder, LineTooLongError } from '../am-host-protocol.js';

describe('am-host-protocol LineDecoder', () => {
  it('decodes messages split anywhere, one per line, and counts lines that are not JSON', () => {
    const d = new LineDecoder();
    const bytes = Buffer.from(encodeLine({ a: 1 }) + 'not json\n' + encodeLine({ b: [2, 3] }) + '\n');
    const out: unknown[] = [];
    for (let i = 0; i < bytes.length; i += 3) out.push(...d.push(bytes.subarray(i, i + 3)));
    expect(out).to.deep.equal([{ a: 1 }, { b: [2, 3] }]);
    expect(d.malformed).to.equal(1);
  });

  it('decodes a character whose bytes come in two reads whole', () => {
    const d = new LineDecoder();
    const bytes = Buffer.from(encodeLine({ dir: '/w/ö/日本' }));
    const cut = bytes.indexOf(Buffer.from('ö')) + 1; // inside the two bytes of ö
    const cut2 = bytes.indexOf(Buffer.from('日')) + 2; // inside the three bytes of 日
    const out = [...d.push(bytes.subarray(0, cut)), ...d.push(bytes.subarray(cut, cut2)), ...d.push(bytes.subarray(cut2))];
    expect(out).to.deep.equal([{ dir: '/w/ö/日本' }]);
  });

  it('throws on a line past its limit, whether or not its newline has come', () => {
    const open = new LineDecoder(100);
    expect(open.push('x'.repeat(60))).to.deep.equal([]);
    expect(() => open.push('x'.repeat(60))).to.throw(LineTooLongError, /past the limit of 100/);
    const whole = new LineDecoder(100);
    expect(() => whole.push(`"${'y'.repeat(200)}"\n`)).to.throw(LineTooLongError);
    const fits = new LineDecoder(100);
    expect(fits.push(encodeLine('z'.repeat(90)))).to.deep.equal(['z'.repeat(90)]);
  });
});
