import { expect } from 'chai';
import { InvalidArgumentError } from '@fuxi/common';
import { execFileSync } from 'node:child_process';
import { DEFAULT_MAX_MESSAGE_BYTES, parseMaxMessageBytes } from '../message-size.js';

/** maxMessageBytes() of a fresh process whose environment holds `value`. */
function inFreshProcess(value: string): number {
  const mod = new URL('../message-size.js', import.meta.url).href;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', `import { maxMessageBytes } from '${mod}'; console.log(maxMessageBytes());`], {
    env: { ...process.env, FUXI_MAX_MESSAGE_BYTES: value },
  });
  return Number(String(out).trim());
}

describe('maxMessageBytes (message-size.ts)', () => {
  it('reads bytes or a binary suffix', () => {
    expect(parseMaxMessageBytes('maxMessageBytes', 1048576)).to.equal(1048576);
    expect(parseMaxMessageBytes('maxMessageBytes', '16Mi')).to.equal(16 * 1024 * 1024);
    expect(parseMaxMessageBytes('maxMessageBytes', '512Ki')).to.equal(512 * 1024);
    expect(parseMaxMessageBytes('maxMessageBytes', '1Gi')).to.equal(1024 ** 3);
    expect(DEFAULT_MAX_MESSAGE_BYTES).to.equal(64 * 1024 * 1024);
  });

  it('refuses nonsense, too small and too large, naming the key', () => {
    for (const v of ['lots', -1, 1000, '3Gi', 1.5, true])
      expect(() => parseMaxMessageBytes('maxMessageBytes', v), JSON.stringify(v)).to.throw(
        InvalidArgumentError,
        /^maxMessageBytes: must be bytes from 65536 to 2Gi/,
      );
  });

  it('a process without a config takes FUXI_MAX_MESSAGE_BYTES (an AM, the AM host), a bad value the default', () => {
    expect(inFreshProcess('1Mi')).to.equal(1024 * 1024);
    expect(inFreshProcess('nonsense')).to.equal(DEFAULT_MAX_MESSAGE_BYTES);
  });
});
