/**
 * The runtime image opens a shared PostgreSQL store (`spec.store.postgres` renders MURMUR_STORE):
 * the image carries `pg`, which the A2A SDK's migration runner loads by a computed name that the
 * image's file tracer once missed — every replicated Capsule then crash-looped with E-STORE-002,
 * and only the real-node suite noticed. A real PostgreSQL server on the host's side of the test
 * network (its gateway address) stands in for the database a cluster would run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendMessage } from '../../runtime/a2a/peers/client.ts';
import { startPostgres, type Postgres } from '../support/postgres.ts';
import { capsuleDir, logLines, startNetwork, startRuntime, type RunningRuntime, type TestNetwork } from './kit.ts';

let net: TestNetwork;
let pg: Postgres;
let rt: RunningRuntime;

beforeAll(async () => {
  net = await startNetwork();
  // Only the test network's own subnet may connect (samenet: the subnets of the server's addresses).
  pg = await startPostgres({ listen: net.gateway, hba: ['host all murmur samenet trust'] });
  const store = await pg.url('capsule_store');
  rt = await startRuntime({
    net,
    turns: [{ text: 'stored in postgres', usage: { input: 7, output: 3 } }],
    capsule: capsuleDir('shared'),
    env: { MURMUR_STORE: store },
  });
}, 300_000);

afterAll(async () => {
  await rt?.stop();
  await pg?.stop();
  await net?.stop();
});

describe('the runtime image on a PostgreSQL store', () => {
  it('opens the store on the server (migrated by the SDK), not memory', async () => {
    const log = await logLines(rt.container, /^store: /);
    expect(log).not.toMatch(/E-STORE-00[24]/);
    expect(log).toContain(`store: postgres postgresql://${net.gateway}:${pg.port}/capsule_store (opened in`);
  });

  it("keeps a completed task in the server's task table", async () => {
    const done = await sendMessage({ peerUrl: rt.a2aUrl, text: 'keep this', allow: [rt.a2aUrl], wait: true });
    expect(done).toMatchObject({ ok: true, state: 'completed', text: 'stored in postgres' });
    const taskId = (done as { taskId: string }).taskId;
    const c = await pg.admin('capsule_store');
    try {
      const rows = (await c.query('SELECT status_state FROM tasks WHERE id = $1', [taskId])).rows;
      // The SDK stores the state in its protocol's enum spelling.
      expect(rows).toEqual([{ status_state: 'TASK_STATE_COMPLETED' }]);
    } finally {
      await c.end();
    }
  });
});
