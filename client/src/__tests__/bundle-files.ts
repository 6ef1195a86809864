/** The bundled CLI as `make build` leaves it, for the tests that run it as a separate process. */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const clientDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The bin (scripts/bundle-launcher.cjs) and the bundle it runs. */
export const BIN = join(clientDir, 'dist', 'fuxi.cjs');
export const BUNDLE = join(clientDir, 'dist', 'fuxi.bundle.cjs');

/** A finished `fuxi` process. */
export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}
