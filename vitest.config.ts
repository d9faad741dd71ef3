import { defineConfig } from 'vitest/config';

// Five projects: everything that needs only Node + WASM; the operator's pure tests (translate
// golden files, unit tests: no API server, so they run anywhere); the operator suite, which
// needs a real kube-apiserver (started once by the cluster global setup, or taken from $KUBECONFIG);
// the image contract tests, which need a Docker engine and the built images
// (test/images/global-setup.ts); and the real-node e2e suite (containers, Services,
// NetworkPolicies on a real kubelet node: Linux + root). What a 'runtime' test file needs from
// outside the repository (the OCI registry and oras, the Python A2A SDK) its own first beforeAll
// builds when missing (test/support/build-on-use.ts), so it does not hold up the other files.
const OPERATOR_PURE = ['test/operator/unit/**/*.test.ts', 'test/operator/golden.test.ts'];
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // each file's temp dirs in a folder of its own, removed when the file ends (tmp-per-file.ts)
    setupFiles: ['test/support/tmp-per-file.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'runtime',
          include: ['test/**/*.test.ts', 'runtime/**/*.test.ts'],
          exclude: ['test/operator/**', 'test/cluster/**', 'test/images/**', 'test/realnode/**', 'node_modules/**'],
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
      {
        extends: true,
        test: {
          name: 'images',
          include: ['test/images/**/*.test.ts'],
          globalSetup: ['test/support/tmp-setup.ts', 'test/images/global-setup.ts'],
          pool: 'forks',
          fileParallelism: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'realnode',
          include: ['test/realnode/**/*.test.ts'],
          globalSetup: ['test/support/tmp-setup.ts', 'test/realnode/global-setup.ts'],
          pool: 'forks',
          // one node, two cores: one file at a time
          fileParallelism: false,
          testTimeout: 240_000,
        },
      },
    ],
  },
});
