/**
 * A capsule reached through a local forward, as `mur send capsule/<name>` reaches one: its agent
 * card advertises the in-cluster Service URL, which does not resolve here, and the client speaks
 * to the forwarded address instead. A real `mur serve` with that `--public-url` stands in for the
 * pod behind the forward (the port-forward itself runs on the real node: test/realnode/mur-client.test.ts).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { connectAgent } from '../../runtime/client/connect.ts';
import { userMessage } from '../../runtime/client/message.ts';
import { sendAndFollow } from '../../runtime/client/task-calls.ts';
import { freePort } from '../cli/serve-kit.ts';
import { capsule, closeAll } from './kit.ts';

afterAll(closeAll);

const ADVERTISED = 'http://assistant.team-a.svc.cluster.local:8080';

describe('a capsule behind a forward', () => {
  it('is spoken to at the local address though its card names the in-cluster URL; without the rewrite it is unreachable', async () => {
    const port = await freePort();
    const grpcPort = await freePort();
    await capsule('forwarded', { turns: [{ text: 'through the forward' }] }, { args: ['--a2a-port', String(port), '--grpc-port', String(grpcPort), '--public-url', `${ADVERTISED}/`] });
    const local = `http://127.0.0.1:${port}/`;
    const card = await (await fetch(new URL('/.well-known/agent-card.json', local))).json();
    expect(card.supportedInterfaces[0].url).toBe(`${ADVERTISED}/`);

    const direct = await connectAgent({ url: local });
    await expect(sendAndFollow(direct, userMessage({ text: 'hi' }), () => {})).rejects.toMatchObject({ code: 'E-CLI-032', message: expect.stringMatching(/unreachable while sending the task: ENOTFOUND/) });

    const via = await connectAgent({ url: local, reachVia: { advertised: ADVERTISED, local } });
    // Only the forwarded HTTP port is offered; gRPC's own port is not forwarded.
    expect(via.card.supportedInterfaces.map((i) => i.url)).toEqual(expect.arrayContaining([local, `${local}rest`]));
    expect(via.card.supportedInterfaces.map((i) => i.protocolBinding)).not.toContain('GRPC');
    const outcome = await sendAndFollow(via, userMessage({ text: 'hi' }), () => {});
    expect(outcome).toMatchObject({ state: 'completed', answer: 'through the forward' });
  });
});
