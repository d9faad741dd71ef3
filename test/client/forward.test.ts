/**
 * A capsule reached through a local forward, as `mur send capsule/<name>` reaches one: its agent
 * card advertises the in-cluster Service URL, which does not resolve here, and the client speaks
 * to the forwarded address instead. A real `mur serve` with that `--public-url` stands in for the
 * pod behind the forward (the port-forward itself runs on the real node: test/realnode/mur-client.test.ts).
 */
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { connectAgent } from '../../runtime/client/connect.ts';
import { userMessage } from '../../runtime/client/message.ts';
import { sendAndFollow } from '../../runtime/client/task-calls.ts';
import { freePort } from '../cli/serve-kit.ts';
import { capsule, cleanup, closeAll } from './kit.ts';

afterAll(closeAll);

const ADVERTISED = 'http://assistant.team-a.svc.cluster.local:8080';

describe('a capsule behind a forward', () => {
  it('is spoken to at the local address though its card names the in-cluster URL; without the rewrite it is unreachable', async () => {
    const port = await freePort();
    const grpcPort = await freePort();
    await capsule(
      'forwarded',
      { turns: [{ text: 'through the forward' }] },
      { args: ['--a2a-port', String(port), '--grpc-port', String(grpcPort), '--public-url', `${ADVERTISED}/`] },
    );
    const local = `http://127.0.0.1:${port}/`;
    const card = await (await fetch(new URL('/.well-known/agent-card.json', local))).json();
    expect(card.supportedInterfaces[0].url).toBe(`${ADVERTISED}/`);

    const direct = await connectAgent({ url: local });
    await expect(sendAndFollow(direct, userMessage({ text: 'hi' }), () => {})).rejects.toMatchObject({
      code: 'E-CLI-032',
      message: expect.stringMatching(/unreachable while sending the task: ENOTFOUND/),
    });

    const via = await connectAgent({ url: local, reachVia: { advertised: ADVERTISED, local } });
    // Only the forwarded HTTP port is offered; gRPC's own port is not forwarded.
    expect(via.card.supportedInterfaces.map((i) => i.url)).toEqual(expect.arrayContaining([local, `${local}rest`]));
    expect(via.card.supportedInterfaces.map((i) => i.protocolBinding)).not.toContain('GRPC');
    const outcome = await sendAndFollow(via, userMessage({ text: 'hi' }), () => {});
    expect(outcome).toMatchObject({ state: 'completed', answer: 'through the forward' });
  });
});

describe('a stream that breaks off', () => {
  it('is not the task’s end: the client re-attaches to the task and ends with its outcome', async () => {
    let arrived!: () => void;
    let release!: () => void;
    const inFlight = new Promise<void>((r) => (arrived = r));
    const released = new Promise<void>((r) => (release = r));
    const { served } = await capsule('cut', { turns: [{ text: 'after the cut', hold: () => (arrived(), released) }] });
    // A TCP proxy in front of the capsule that cuts the first connection carrying the stream once
    // the first turn's status has gone through, as a dropped port-forward does.
    let cut!: () => void;
    const wasCut = new Promise<void>((r) => (cut = r));
    let armed = true;
    const target = new URL(served.url);
    const open = new Set<Socket>();
    const proxy = createServer((client) => {
      open.add(client);
      client.once('close', () => open.delete(client));
      const upstream = connect(Number(target.port), target.hostname);
      client.on('error', () => {});
      upstream.on('error', () => {});
      client.pipe(upstream);
      upstream.on('data', (d: Buffer) => {
        if (armed && d.includes('inference turn 1')) {
          // The client has the task and the turn, then the connection dies.
          armed = false;
          client.write(d, () => {
            client.destroy();
            upstream.destroy();
            cut();
          });
        } else client.write(d);
      });
      upstream.on('end', () => client.end());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    // Kept-alive connections through the proxy would hold close() for the server's keep-alive time.
    cleanup.push(
      () =>
        new Promise((r) => {
          proxy.close(r);
          for (const c of open) c.destroy();
        }),
    );
    const local = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/`;
    const conn = await connectAgent({ url: local, reachVia: { advertised: served.url, local } });
    const steps: string[] = [];
    const sending = sendAndFollow(conn, userMessage({ text: 'hi' }), (e) => steps.push(e.kind));
    sending.catch(() => {}); // awaited below; a failure must not go unhandled while the test waits
    await Promise.all([inFlight, wasCut]);
    release();
    const outcome = await sending;
    expect(outcome).toMatchObject({ state: 'completed', answer: 'after the cut' });
    expect(steps).toContain('reattached');
    expect(steps.filter((k) => k === 'task')).toHaveLength(1);
  });
});
