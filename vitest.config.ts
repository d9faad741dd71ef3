import { defineConfig } from 'vitest/config';

// Two projects: everything that needs only Node + WASM, and the operator suite, which needs a real
// kube-apiserver (started once by the cluster global setup, or taken from $KUBECONFIG).
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
          name: 'operator',
          include: ['test/operator/**/*.test.ts', 'test/cluster/**/*.test.ts', 'operator/**/*.test.ts'],
          globalSetup: ['test/support/tmp-setup.ts', 'test/cluster/global-setup.ts'],
          pool: 'forks',
          fileParallelism: false,
        },
      },
    ],
  },
});
