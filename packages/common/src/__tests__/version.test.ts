import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FUXI_VERSION } from '../version.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');

describe('--version', () => {
  it('FUXI_VERSION is every package version', () => {
    for (const dir of ['.', 'proto', 'packages/common', 'packages/rpc', 'packages/store', 'master', 'agent', 'appmaster', 'client', 'deploy']) {
      const v = (JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as { version: string }).version;
      expect(v, dir).to.equal(FUXI_VERSION);
    }
  });

  it('every binary prints it and exits 0', () => {
    for (const bin of [
      'master/dist/shell/main.js',
      'agent/dist/shell/main.js',
      'appmaster/dist/shell/main.js',
      'appmaster/dist/shell/am-host-main.js',
      'client/dist/cli/main.js',
      'deploy/dist/local-cluster-main.js',
    ]) {
      expect(execFileSync(process.execPath, [join(ROOT, bin), '--version'], { encoding: 'utf8', timeout: 20_000 }).trim(), bin).to.equal(FUXI_VERSION);
    }
  });
});
