/**
 * Capsules as separate processes on 127.0.0.1 calling each other through sendMessage (allowed
 * and refused); origin/trust/traceparent headers on the wire; the allowlist refusal makes no
 * connection.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { policyError, sendMessage, getTask, followTask } from '../../runtime/a2a/peers/client.ts';
import { isUrlAllowed } from '../../runtime/net/allowlist.ts';
import { parseOriginTrust } from '../../runtime/a2a/core/wire.ts';
import { closeAll, serve } from './helpers.ts';
import { createAuthenticator } from '../../runtime/a2a/server/auth.ts';

const children: ChildProcess[] = [];
/** The API key the test peers share (declared peers of each other). */
const MESH_KEY = `mesh-${crypto.randomUUID()}`;

function startPeer(name: string, allow: string[]): Promise<string> {
  const script = fileURLToPath(new URL('./fixtures/peer.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, PEER_NAME: name, PEER_ALLOW: allow.join(','), PEER_KEY: MESH_KEY },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (d) => {
      buf += d;
      const line = buf.split('\n')[0];
      if (buf.includes('\n') && line) resolve(JSON.parse(line).url);
    });
    child.once('exit', (code) => reject(new Error(`peer ${name} exited with ${code}`)));
  });
}

const hostPort = (url: string) => new URL(url).host;

/** A plain HTTP server that counts TCP connections and records request headers. */
async function countingServer() {
  let connections = 0;
  const seen: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers);
    res.statusCode = 404;
    res.end();
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return { url, connections: () => connections, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

let A = '';
let B = '';
let C = '';
let counter: Awaited<ReturnType<typeof countingServer>>;

beforeAll(async () => {
  counter = await countingServer();
  C = await startPeer('C', []);
  B = await startPeer('B', [hostPort(C)]);
  A = await startPeer('A', [`http://${hostPort(B)}`]);
}, 60_000);

afterAll(async () => {
  for (const c of children) c.kill('SIGTERM');
  await counter.close();
  await closeAll();
});

describe('peering between processes', () => {
  const allowAll = () => [hostPort(A), hostPort(B), hostPort(C)];

  it('A → B → C through allowlists', async () => {
    const r = await sendMessage({ peerUrl: A, text: `ask ${B} ask ${C} hello`, allow: allowAll(), trust: 'trusted', bearer: MESH_KEY, wait: true });
    expect(r).toMatchObject({ ok: true, state: 'completed', text: 'A got: B got: C: hello' });
  });

  it('refused: A may not call C; the error is the exact policy string', async () => {
    const r = await sendMessage({ peerUrl: A, text: `ask ${C} hi`, allow: allowAll(), wait: true });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.state).toBe('failed');
    expect(r.text).toBe(`network policy: '${C}' not in capabilities.network.allow`);
  });

  it('refused in another process makes no connection', async () => {
    const before = counter.connections();
    const r = await sendMessage({ peerUrl: A, text: `ask ${counter.url} hi`, allow: allowAll(), wait: true });
    expect(r.ok && r.text).toBe(policyError(counter.url));
    expect(counter.connections()).toBe(before);
  });

  it('origin is peer and trust is inherited, never upgraded', async () => {
    const trusted = await sendMessage({ peerUrl: A, text: `ask ${B} whoami`, allow: allowAll(), trust: 'trusted', bearer: MESH_KEY, wait: true });
    expect(trusted.ok && trusted.text).toBe('A got: B origin=peer trust=trusted traceparent=-');
    const untrusted = await sendMessage({ peerUrl: A, text: `ask ${B} whoami`, allow: allowAll(), trust: 'untrusted', bearer: MESH_KEY, wait: true });
    expect(untrusted.ok && untrusted.text).toBe('A got: B origin=peer trust=untrusted traceparent=-');
  });

  it('traceparent propagates across hops', async () => {
    const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const r = await sendMessage({ peerUrl: A, text: `ask ${B} whoami`, allow: allowAll(), trust: 'trusted', traceparent: tp, bearer: MESH_KEY, wait: true });
    expect(r.ok && r.text).toBe(`A got: B origin=peer trust=trusted traceparent=${tp}`);
  });

  it('a future-version traceparent reaches the task whole; version ff does not (W3C versioning)', async () => {
    const future = '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next';
    const r = await sendMessage({ peerUrl: B, text: 'whoami', allow: allowAll(), trust: 'trusted', traceparent: future, bearer: MESH_KEY, wait: true });
    expect(r.ok && r.text).toBe(`B origin=peer trust=trusted traceparent=${future}`);
    const ff = await sendMessage({
      peerUrl: B,
      text: 'whoami',
      allow: allowAll(),
      trust: 'trusted',
      traceparent: `ff${future.slice(2)}`,
      bearer: MESH_KEY,
      wait: true,
    });
    expect(ff.ok && ff.text).toBe('B origin=peer trust=trusted traceparent=-');
  });

  it('non-blocking send, then getTask/followTask', async () => {
    const r = await sendMessage({ peerUrl: C, text: 'later', allow: allowAll() });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const f = await followTask({ peerUrl: C, taskId: r.taskId, allow: allowAll(), deadlineMs: 5000 });
    expect(f).toMatchObject({ ok: true, state: 'completed', text: 'C: later', timedOut: false });
    const g = await getTask({ peerUrl: C, taskId: r.taskId, allow: allowAll() });
    expect(g).toMatchObject({ ok: true, state: 'completed', contextId: r.contextId });
  });
});

describe('client policy and headers (in process)', () => {
  it('a URL outside the allowlist: exact error, zero connections', async () => {
    const before = counter.connections();
    for (const allow of [[], ['127.0.0.2'], ['localhost:1'], [`https://127.0.0.1:${new URL(counter.url).port}`]]) {
      const r = await sendMessage({ peerUrl: counter.url, text: 'x', allow });
      expect(r).toEqual({ ok: false, error: `network policy: '${counter.url}' not in capabilities.network.allow` });
      const g = await getTask({ peerUrl: counter.url, taskId: 't', allow });
      expect(g).toEqual({ ok: false, error: policyError(counter.url) });
    }
    expect(counter.connections()).toBe(before);
  });

  it('a card that points the endpoint at a host outside the allowlist is refused before connecting there', async () => {
    const before = counter.connections();
    const liar = http.createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          name: 'liar',
          description: 'x',
          version: '1',
          capabilities: { streaming: true },
          defaultInputModes: ['text/plain'],
          defaultOutputModes: ['text/plain'],
          skills: [],
          supportedInterfaces: [{ url: counter.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
        }),
      );
    });
    await new Promise<void>((r) => liar.listen(0, '127.0.0.1', r));
    const liarUrl = `http://127.0.0.1:${(liar.address() as AddressInfo).port}/`;
    const r = await sendMessage({ peerUrl: liarUrl, text: 'x', allow: [hostPort(liarUrl)] });
    expect(r).toEqual({ ok: false, error: policyError(counter.url) });
    expect(counter.connections()).toBe(before);
    await new Promise<void>((r2) => liar.close(() => r2()));
  });

  it('every outgoing request carries origin peer, the sender trust and traceparent', async () => {
    const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    counter.seen.length = 0;
    const r = await sendMessage({ peerUrl: counter.url, text: 'x', allow: [hostPort(counter.url)], trust: 'untrusted', traceparent: tp });
    expect(r.ok).toBe(false); // not an A2A server
    expect(counter.seen.length).toBeGreaterThan(0);
    for (const h of counter.seen) {
      expect(h['x-murmur-task-origin']).toBe('peer');
      expect(h['x-murmur-task-trust']).toBe('untrusted');
      expect(h.traceparent).toBe(tp);
    }
  });

  it('the receiving server reads origin/trust per the rules (from a verified, declared peer)', async () => {
    const seen: Array<[string, string]> = [];
    const s = await serve(
      async (ctx) => {
        seen.push([ctx.origin, ctx.trust]);
        return { state: 'completed' };
      },
      { auth: createAuthenticator({ apiKeys: [{ name: 'peer', key: 'k-peer' }], anonymous: false, trustedCallers: ['apikey:peer'] }) },
    );
    const send = (h: Record<string, string>) =>
      fetch(s.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer k-peer', ...h },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'message/send',
          params: { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'x' }] } },
        }),
      }).then((r) => r.json());
    await send({});
    await send({ 'x-murmur-task-origin': 'peer', 'x-murmur-task-trust': 'trusted' });
    await send({ 'x-murmur-task-origin': 'completion' });
    await send({ 'x-murmur-task-origin': 'system', 'x-murmur-task-trust': 'trusted' });
    await send({ 'x-murmur-task-origin': 'user', 'x-murmur-task-trust': 'trusted' });
    await send({ 'x-murmur-task-trust': 'TRUSTED' });
    await send({ 'x-murmur-task-trust': 'yes' });
    expect(seen).toEqual([
      ['user', 'untrusted'],
      ['peer', 'trusted'],
      ['completion', 'untrusted'],
      ['event', 'untrusted'],
      ['event', 'untrusted'],
      ['user', 'trusted'],
      ['user', 'untrusted'],
    ]);
  });

  it('a spoofed trust header is ignored: from an anonymous caller, and from a caller that is not a declared peer', async () => {
    const seen: string[] = [];
    const s = await serve(
      async (ctx) => {
        seen.push(ctx.trust);
        return { state: 'completed' };
      },
      {
        auth: createAuthenticator({
          apiKeys: [
            { name: 'peer', key: 'k-peer' },
            { name: 'outsider', key: 'k-out' },
          ],
          anonymous: true,
          trustedCallers: ['apikey:peer'],
        }),
      },
    );
    const send = (h: Record<string, string>) =>
      fetch(s.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-murmur-task-origin': 'peer', 'x-murmur-task-trust': 'trusted', ...h },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'message/send',
          params: { message: { kind: 'message', messageId: 'm', role: 'user', parts: [{ kind: 'text', text: 'x' }] } },
        }),
      }).then((r) => r.json());
    await send({});
    await send({ authorization: 'Bearer k-out' });
    await send({ authorization: 'Bearer k-peer' });
    expect(seen).toEqual(['untrusted', 'untrusted', 'trusted']);
  });

  it('a trusted claim sent to A without credentials does not reach B as trusted', async () => {
    const r = await sendMessage({ peerUrl: A, text: `ask ${B} whoami`, allow: [hostPort(A), hostPort(B), hostPort(C)], trust: 'trusted', wait: true });
    expect(r.ok && r.text).toBe('A got: B origin=peer trust=untrusted traceparent=-');
  });

  it('parseOriginTrust', () => {
    expect(parseOriginTrust({})).toEqual({ origin: 'user', trust: 'untrusted' });
    expect(parseOriginTrust({ 'x-murmur-task-origin': 'Peer', 'x-murmur-task-trust': 'trusted' })).toEqual({ origin: 'peer', trust: 'trusted' });
    expect(parseOriginTrust({ 'x-murmur-task-origin': 'schedule', 'x-murmur-task-trust': 'trusted' })).toEqual({ origin: 'event', trust: 'untrusted' });
  });

  it('allowlist matching: host | host:port | scheme://host[:port]', () => {
    expect(isUrlAllowed('http://peer:7001/', ['peer'])).toBe(true);
    expect(isUrlAllowed('https://peer/', ['peer'])).toBe(true);
    expect(isUrlAllowed('http://peer:7001/', ['peer:7001'])).toBe(true);
    expect(isUrlAllowed('http://peer:7002/', ['peer:7001'])).toBe(false);
    expect(isUrlAllowed('http://peer/', ['peer:80'])).toBe(true);
    expect(isUrlAllowed('http://peer:7001', ['http://peer:7001'])).toBe(true);
    expect(isUrlAllowed('https://peer:7001', ['http://peer:7001'])).toBe(false);
    expect(isUrlAllowed('http://peer/', ['http://peer'])).toBe(true);
    expect(isUrlAllowed('http://peer:8080/', ['http://peer'])).toBe(false);
    expect(isUrlAllowed('http://PEER.example.com/', ['peer.example.com'])).toBe(true);
    expect(isUrlAllowed('http://a.svc.local/', ['*.svc.local'])).toBe(true);
    expect(isUrlAllowed('http://svc.local/', ['*.svc.local'])).toBe(false);
    expect(isUrlAllowed('http://peerx/', ['peer'])).toBe(false);
    expect(isUrlAllowed('http://[::1]:9/', ['[::1]:9'])).toBe(true);
    expect(isUrlAllowed('ftp://peer/', ['peer'])).toBe(false);
    expect(isUrlAllowed('http://user:pw@peer/', ['peer'])).toBe(false);
    expect(isUrlAllowed('not a url', ['peer'])).toBe(false);
  });
});
