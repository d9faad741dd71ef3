/**
 * The runtime image keeps its tasks in the embedded SQLite store (issue 13, item 1, on the image):
 * the image carries better-sqlite3's native addon and the A2A SDK's migrations, so `mur serve`'s
 * default store is a file on the work root, not memory (E-STORE-004). With a volume on the work
 * root, a task completed before the container is killed (SIGKILL) and started again still answers
 * `tasks/get` afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getContainerRuntimeClient, type StartedTestContainer } from 'testcontainers';
import { getTask, sendMessage } from '../../runtime/a2a/client.ts';
import { freePort } from '../cli/serve-kit.ts';
import type { ScriptedProvider } from '../provider/scripted-provider.ts';
import { capsuleDir, logLines, providerOn, runtimeContainer, startNetwork, workVolume, type TestNetwork } from './kit.ts';

let net: TestNetwork;
let provider: ScriptedProvider;
let container: StartedTestContainer;
let a2aUrl = '';

beforeAll(async () => {
  net = await startNetwork();
  provider = await providerOn(net, [{ text: 'kept across the restart', usage: { input: 9, output: 4 } }]);
  const a2aPort = await freePort();
  container = await runtimeContainer({ net, provider, capsule: capsuleDir('durable'), a2aPort, workVolume: workVolume() }).start();
  a2aUrl = `http://127.0.0.1:${a2aPort}/`;
}, 300_000);

afterAll(async () => {
  await container?.stop();
  await provider?.stop();
  await net?.stop();
});

describe('the runtime image with a volume on its work root', () => {
  it('opens the SQLite store on the volume (not memory: E-STORE-004)', async () => {
    const log = await logLines(container, /^store: /);
    expect(log).not.toMatch(/E-STORE-004/);
    expect(log).toMatch(/^store: sqlite \/var\/lib\/murmur\/durable\.store\.db \(opened in/m);
  });

  it('answers tasks/get for a task completed before the container was killed and started again', async () => {
    const done = await sendMessage({ peerUrl: a2aUrl, text: 'remember me', allow: [a2aUrl], wait: true });
    expect(done).toMatchObject({ ok: true, state: 'completed', text: 'kept across the restart' });
    const taskId = (done as { taskId: string }).taskId;

    const docker = (await getContainerRuntimeClient()).container.dockerode;
    const c = docker.getContainer(container.getId());
    await c.kill({ signal: 'SIGKILL' });
    expect((await c.wait()) as { StatusCode: number }).toMatchObject({ StatusCode: 137 });
    await c.start();
    // The second start's "serving" line: the front door listens again, on the same published port.
    const log = await logLines(container, /^serving durable /, 2);
    expect(log.match(/^store: sqlite .*$/gm)).toHaveLength(2);

    const got = await getTask({ peerUrl: a2aUrl, allow: [a2aUrl], taskId });
    expect(got).toMatchObject({ ok: true, taskId, state: 'completed', text: 'kept across the restart' });
    // Answered from the store: the provider was called once, before the kill.
    expect(provider.requests).toHaveLength(1);
  });
});
