/**
 * `capsule_idle_seconds` and `capsule_idle_since_timestamp_seconds` of a real `mur serve` (the
 * signal the operator puts a Capsule to sleep by): scraped from its /metrics over HTTP while
 * requests on each binding are held open by the scripted provider, and after they end. The
 * official SDK client drives JSON-RPC, HTTP+JSON and gRPC (on the A2A port, `--grpc-port same`, as
 * every Capsule on Kubernetes serves it).
 */
import http from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskState, type Message, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory, type Client, type TransportFactory } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { API_KEY, PROBE_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider, type ScriptTurn } from '../provider/scripted-provider.ts';
import { parseExposition } from '../telemetry/prom-text.ts';
import { userMessage } from '../a2a/helpers.ts';
import { freePort, gate, serve, type Served } from './serve-kit.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

// One capsule for the file; each test consumes its own turns of the script, in file order.
const streamGate = gate();
const restGate = gate();
const grpcUnaryGate = gate();
const grpcStreamGate = gate();
const TURNS: ScriptTurn[] = [
  { hold: streamGate.hold, text: 'streamed' },
  { hold: restGate.hold, text: 'over rest' },
  { hold: grpcUnaryGate.hold, text: 'over grpc' },
  { hold: grpcStreamGate.hold, text: 'streamed over grpc' },
  { toolCalls: [{ name: 'probe', input: { op: 'ask', prompt: 'Which colour?' } }] },
  { text: 'painted blue' },
];

let s: Served;
let metricsUrl = '';
beforeAll(async () => {
  for (const g of [streamGate, restGate, grpcUnaryGate, grpcStreamGate]) cleanup.push(async () => g.open());
  const provider = await startScriptedProvider(TURNS);
  cleanup.push(() => provider.stop());
  const registry = await makeRegistry([driverDef('anthropic'), PROBE_TOOL]);
  const capsule = tmp('activity-');
  writeFileSync(join(capsule, 'murmur.yaml'), capsuleYaml({ name: 'sleeper', tools: [PROBE_TOOL.name], extra: 'lifecycle:\n  task_acceptance: queue\n' }));
  const metricsPort = await freePort();
  s = await serve(capsule, {
    registry,
    workRoot: tmp('activity-work-'),
    env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
    args: ['--metrics-port', String(metricsPort), '--grpc-port', 'same', '--store', 'memory'],
  });
  cleanup.push(() => s.stop());
  metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
}, 240_000); // the first build of the sandbox-probe fixture is slow on a loaded machine

async function idle(): Promise<{ seconds: number; since: number }> {
  const x = parseExposition(await (await fetch(metricsUrl)).text());
  return { seconds: x.get('capsule_idle_seconds', { capsule: 'sleeper' })!, since: x.get('capsule_idle_since_timestamp_seconds', { capsule: 'sleeper' })! };
}

/**
 * After work that ended at or after `t0` (ms): idle (a start of the idle period, which is 0 while
 * busy), and that period began after `t0`. The seconds may still read 0 when the scrape lands in
 * the millisecond the work ended (loopback round trips are shorter), so they are only not negative.
 */
async function idleSince(t0: number): Promise<void> {
  const after = await idle();
  expect(after.since).toBeGreaterThanOrEqual(t0 / 1000);
  expect(after.seconds).toBeGreaterThanOrEqual(0);
}

const client = (binding: string, factory: TransportFactory): Promise<Client> =>
  new ClientFactory({ transports: [factory], preferredTransports: [binding] }).createFromUrl(s.url);
const send = (text: string, extra: Partial<Message> = {}) => ({ tenant: '', message: userMessage(text, extra), configuration: undefined, metadata: undefined });

async function drain(events: AsyncIterable<StreamResponse>): Promise<StreamResponse[]> {
  const out: StreamResponse[] = [];
  for await (const e of events) out.push(e);
  return out;
}

describe('the idle signal of mur serve (capsule_idle_seconds)', () => {
  it('grows while nothing happens: the card, health and readiness are not A2A requests and do not reset it', async () => {
    const before = await idle();
    expect(before.since).toBeGreaterThan(0);
    expect((await fetch(new URL('.well-known/agent-card.json', s.url))).status).toBe(200);
    expect((await fetch(new URL('healthz', s.url))).status).toBe(200);
    expect((await fetch(new URL('readyz', s.url))).status).toBe(200);
    const after = await idle();
    expect(after.seconds).toBeGreaterThan(before.seconds);
    expect(after.since).toBe(before.since);
  });

  it('is 0 while an A2A request is in flight, before any task exists (its body still arriving)', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'no-such-task' } });
    const req = http.request(s.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), expect: '100-continue' },
    });
    const answered = new Promise<string>((resolve, reject) => {
      req.once('response', (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.once('end', () => resolve(text));
      });
      req.once('error', reject);
    });
    // The server says 100 Continue once it has the headers: the request is in flight from then.
    await new Promise<void>((r) => req.once('continue', r));
    req.write(body.slice(0, 10));
    expect(await idle()).toEqual({ seconds: 0, since: 0 });
    const t0 = Date.now();
    req.end(body.slice(10));
    expect(await answered).toMatch(/not found/);
    await idleSince(t0);
  });

  it('an open JSON-RPC message/stream keeps the capsule busy; idle begins once the stream has ended', async () => {
    const c = await client('JSONRPC', new JsonRpcTransportFactory());
    const events = drain(c.sendMessageStream(send('stream it')));
    await streamGate.arrival; // the task is in its provider call, the stream open
    expect(await idle()).toEqual({ seconds: 0, since: 0 });
    const t0 = Date.now();
    streamGate.open();
    const got = await events;
    expect(got.at(-1)?.payload?.$case).toBe('statusUpdate');
    await idleSince(t0);
  });

  it('an HTTP+JSON message:send keeps the capsule busy until it is answered', async () => {
    const c = await client('HTTP+JSON', new RestTransportFactory());
    const answer = c.sendMessage(send('rest it'));
    await restGate.arrival;
    expect(await idle()).toEqual({ seconds: 0, since: 0 });
    const t0 = Date.now();
    restGate.open();
    expect(((await answer) as Task).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    await idleSince(t0);
  });

  it('a gRPC call counts: a unary SendMessage and a SendStreamingMessage keep the capsule busy until they end', async () => {
    const c = await client('GRPC', new GrpcTransportFactory());
    const unary = c.sendMessage(send('grpc it'));
    await grpcUnaryGate.arrival;
    expect(await idle()).toEqual({ seconds: 0, since: 0 });
    let t0 = Date.now();
    grpcUnaryGate.open();
    expect(((await unary) as Task).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    await idleSince(t0);

    const streamed = drain(c.sendMessageStream(send('grpc stream it')));
    await grpcStreamGate.arrival;
    expect(await idle()).toEqual({ seconds: 0, since: 0 });
    t0 = Date.now();
    grpcStreamGate.open();
    expect((await streamed).at(-1)?.payload?.$case).toBe('statusUpdate');
    await idleSince(t0);
  });

  it('without a durable store (no resume point), a task waiting in input-required keeps the capsule busy; the reply completes it and idle begins', async () => {
    const c = await client('JSONRPC', new JsonRpcTransportFactory());
    const first = (await c.sendMessage(send('paint it'))) as Task;
    expect(first.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(await idle()).toEqual({ seconds: 0, since: 0 });
    const t0 = Date.now();
    const done = (await c.sendMessage(send('blue', { taskId: first.id, contextId: first.contextId }))) as Task;
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    await idleSince(t0);
  });
});
