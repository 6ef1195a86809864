// ESLint flat config: typescript-eslint recommended rules and the core rule (import cycles are
// checked by madge in `make lint`):
// files under a core folder never import I/O (grpc, etcd3, level, fs, child_process, timers, net).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const IO_MODULES = ['@grpc/*', 'grpc', 'etcd3', 'level', 'classic-level', 'pino', '@fuxi/rpc', '@fuxi/store', '@fuxi/proto'];
const IO_NODE = ['fs', 'fs/promises', 'child_process', 'timers', 'timers/promises', 'net', 'dgram', 'http', 'http2', 'os', 'worker_threads', 'crypto'];

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'proto/src/generated/**', 'bench-results/**', '**/*.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { ecmaVersion: 2022, sourceType: 'module' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  {
    files: ['**/src/core/**/*.ts'],
    ignores: ['**/src/core/**/__tests__/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [...IO_NODE, ...IO_NODE.map((m) => `node:${m}`)].map((name) => ({ name, message: 'core code is pure: do I/O in the shell (STYLE.md 1)' })),
          patterns: [{ group: IO_MODULES, message: 'core code is pure: do I/O in the shell (STYLE.md 1)' }],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'setTimeout', message: 'cores get time as input' },
        { name: 'setInterval', message: 'cores get time as input' },
        { name: 'process', message: 'cores do not touch the process' },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'cores get time as input (STYLE.md 3)' },
        { object: 'Math', property: 'random', message: 'cores get a seeded RNG as input (STYLE.md 3)' },
      ],
    },
  },
  {
    files: ['**/__tests__/**/*.ts', 'test/**/*.ts'],
    rules: { '@typescript-eslint/no-unused-expressions': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly' } },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { process: 'readonly', Buffer: 'readonly', require: 'readonly', __filename: 'readonly', setTimeout: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
