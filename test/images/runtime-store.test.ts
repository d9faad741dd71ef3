/**
 * The runtime image keeps its tasks in the embedded SQLite store (issue 13, item 1, on the image):
 * the image carries better-sqlite3's native addon and the A2A SDK's migrations, so `mur serve`'s
 * default store is a file on the work root, not memory (E-STORE-004). With a volume on the work
 * root, a task completed before the container is killed (SIGKILL) and started again still answers
 * `tasks/get` afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getContainerRuntimeClient } from 'testcontainers';
import { getTask, sendMessage } from '../../runtime/a2a/peers/client.ts';
import { capsuleDir, logLines, startNetwork, startRuntime, workVolume, type RunningRuntime, type TestNetwork } from './kit.ts';

let net: TestNetwork;
let rt: RunningRuntime;

beforeAll(async () => {
  net = await startNetwork();
  rt = await startRuntime({
    net,
    turns: [{ text: 'kept across the restart', usage: { input: 9, output: 4 } }],
    capsule: capsuleDir('durable'),
    workVolume: workVolume(),
  });
}, 300_000);

afterAll(async () => {
  await rt?.stop();
  await net?.stop();
});

describe('the runtime image with a volume on its work root', () => {
  it('opens the SQLite store on the volume (not memory: E-STORE-004)', async () => {
    const log = await logLines(rt.container, /^store: /);
    expect(log).not.toMatch(/E-STORE-004/);
    expect(log).toMatch(/^store: sqlite \/var\/lib\/murmur\/durable\.store\.db \(opened in/m);
  });

  it('answers tasks/get for a task completed before the container was killed and started again', async () => {
    const done = await sendMessage({ peerUrl: rt.a2aUrl, text: 'remember me', allow: [rt.a2aUrl], wait: true });
    expect(done).toMatchObject({ ok: true, state: 'completed', text: 'kept across the restart' });
    const taskId = (done as { taskId: string }).taskId;

    const docker = (await getContainerRuntimeClient()).container.dockerode;
    const c = docker.getContainer(rt.container.getId());
    await c.kill({ signal: 'SIGKILL' });
    expect((await c.wait()) as { StatusCode: number }).toMatchObject({ StatusCode: 137 });
    await c.start();
    // The second start's "serving" line: the front door listens again, on the same published port.
    const log = await logLines(rt.container, /^serving durable /, 2);
    expect(log.match(/^store: sqlite .*$/gm)).toHaveLength(2);

    const got = await getTask({ peerUrl: rt.a2aUrl, allow: [rt.a2aUrl], taskId });
    expect(got).toMatchObject({ ok: true, taskId, state: 'completed', text: 'kept across the restart' });
    // Answered from the store: the provider was called once, before the kill.
    expect(rt.provider.requests).toHaveLength(1);
  });
});
