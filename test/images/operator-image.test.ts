/**
 * The operator image (operator/Dockerfile as it is, built by test/images/build.sh) outside any
 * cluster: it starts, runs compiled JavaScript as non-root, and fails at once with a message that
 * says there is no cluster and where it looked (E-OP-020), instead of retrying forever.
 */
import { describe, expect, it } from 'vitest';
import { GenericContainer, Wait } from 'testcontainers';
import { ReadOnlyContainer, operatorImage } from './kit.ts';

async function logsOf(c: { logs(): Promise<NodeJS.ReadableStream> }): Promise<string> {
  let out = '';
  for await (const chunk of await c.logs()) out += String(chunk);
  return out;
}

describe('the operator image', () => {
  it('starts and fails with a clear message when it has no cluster', async () => {
    const c = await new ReadOnlyContainer(operatorImage())
      .withNetworkMode('none')
      // The fatal line is the event to wait for; the exit follows it.
      .withWaitStrategy(Wait.forLogMessage(/fatal: /))
      .withStartupTimeout(60_000)
      .start();
    const client = (await import('testcontainers')).getContainerRuntimeClient;
    const docker = (await client()).container;
    const handle = docker.getById(c.getId());
    const { StatusCode } = (await handle.wait()) as { StatusCode: number };
    const logs = await logsOf(c);
    await c.stop();
    expect(StatusCode).toBe(1);
    expect(logs).toMatch(/E-OP-020 no Kubernetes cluster to connect to/);
    expect(logs).toContain('KUBERNETES_SERVICE_HOST (not set: not running in a pod)');
    expect(logs).not.toMatch(/ up; http on/);
  });

  it("runs the activator pods' preStop command (the chart's `sleep 5`) as its own user", async () => {
    const c = await new GenericContainer(operatorImage())
      .withNetworkMode('none')
      .withEntrypoint(['sh', '-c', 'sleep 5 && echo paused'])
      .withWaitStrategy(Wait.forLogMessage(/^paused$/m))
      .start();
    const out = await logsOf(c);
    await c.stop();
    expect(out).toMatch(/^paused$/m);
  });

  it('carries the Kubernetes client and no WASM toolchain, and runs as non-root', async () => {
    const c = await new GenericContainer(operatorImage())
      .withNetworkMode('none')
      .withEntrypoint(['sh', '-c', 'id -u; cd /app/node_modules && ls -d * @*/*; echo listed'])
      .withWaitStrategy(Wait.forLogMessage(/^listed$/m))
      .start();
    const out = await logsOf(c);
    await c.stop();
    const lines = out.split(/\s+/).filter(Boolean);
    expect(lines[0]).toBe('65532');
    expect(lines).toContain('@kubernetes/client-node');
    for (const absent of [
      '@bytecodealliance/jco',
      '@bytecodealliance/preview2-shim',
      '@bytecodealliance/componentize-js',
      'binaryen',
      'tsx',
      'typescript',
      'esbuild',
    ]) {
      expect(lines).not.toContain(absent);
    }
  });
});
