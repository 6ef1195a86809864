/** This release of Fuxi-TS (every binary's `--version`; kept equal to the packages' version by a unit test). */
export const FUXI_VERSION = '0.1.0';
