import { expect } from 'chai';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstClosedParent } from '../worker-users.js';

describe('worker users: firstClosedParent', () => {
  const nobody = { name: 'nobody', uid: 65534, gid: 65534 };
  let top: string;

  beforeEach(() => {
    top = mkdtempSync(join(tmpdir(), 'fuxi-closed-'));
  });
  afterEach(() => rmSync(top, { recursive: true, force: true }));

  it('names the first parent of the work directory the worker user cannot pass through', () => {
    mkdirSync(join(top, 'a', 'b'), { recursive: true });
    chmodSync(top, 0o700);
    chmodSync(join(top, 'a'), 0o755);
    const closed = process.getuid?.() === nobody.uid ? undefined : firstClosedParent(join(top, 'a', 'b', 'work'), nobody);
    if (process.getuid?.() !== nobody.uid) expect(closed).to.deep.equal({ dir: top, mode: '0700' });
  });

  it('is undefined when every parent lets others through (0711 is enough)', () => {
    mkdirSync(join(top, 'a'), { recursive: true });
    chmodSync(top, 0o711);
    expect(firstClosedParent(join(top, 'a', 'work'), nobody)).to.equal(undefined);
  });

  it('takes the owner bits for a directory the user owns', () => {
    chmodSync(top, 0o700);
    const me = { name: 'me', uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    expect(firstClosedParent(join(top, 'work'), me)).to.equal(undefined);
  });
});
