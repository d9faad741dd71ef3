import { defineConfig } from 'vitest/config';

// Three projects: everything that needs only Node + WASM; the operator's pure tests (translate
// golden files, unit tests: no API server, so they run anywhere); and the operator suite, which
// needs a real kube-apiserver (started once by the cluster global setup, or taken from $KUBECONFIG).
const OPERATOR_PURE = ['test/operator/unit/**/*.test.ts', 'test/operator/golden.test.ts'];
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 180_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'runtime',
          include: ['test/**/*.test.ts', 'runtime/**/*.test.ts'],
          exclude: ['test/operator/**', 'test/cluster/**', 'node_modules/**'],
          globalSetup: ['test/support/tmp-setup.ts'],
          pool: 'forks',
        },
      },
      {
        extends: true,
        test: {
          name: 'operator-pure',
          include: OPERATOR_PURE,
          globalSetup: ['test/support/tmp-setup.ts'],
          pool: 'forks',
        },
      },
      {
        extends: true,
        test: {
          name: 'operator',
          include: ['test/operator/**/*.test.ts', 'test/cluster/**/*.test.ts', 'operator/**/*.test.ts'],
          exclude: [...OPERATOR_PURE, 'node_modules/**'],
          globalSetup: ['test/support/tmp-setup.ts', 'test/cluster/global-setup.ts'],
          pool: 'forks',
          fileParallelism: false,
        },
      },
    ],
  },
});
