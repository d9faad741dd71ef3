/** Shared helpers for the A2A tests: raw JSON-RPC and SSE over real HTTP. */
import { startA2AServer, type A2AServer, type A2AServerOptions } from '../../runtime/a2a/server.ts';
import type { TaskExecutor } from '../../runtime/a2a/executor.ts';

export const servers: A2AServer[] = [];

export async function serve(
  executor: TaskExecutor,
  o: Partial<Omit<A2AServerOptions, 'executor'>> = {},
): Promise<A2AServer> {
  const s = await startA2AServer({
    card: { name: 'test-capsule', version: '0.1.0', description: 'test', skills: [{ id: 'echo', description: 'echo' }] },
    acceptance: 'queue',
    queueDepth: 64,
    ...o,
    executor,
  });
  servers.push(s);
  return s;
}

export async function closeAll(): Promise<void> {
  await Promise.all(servers.splice(0).map((s) => s.close()));
}

let nextId = 1;

export async function rpc(
  url: string,
  method: string,
  params: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
  });
  return { status: r.status, body: await r.json() };
}

export const V1 = { 'A2A-Version': '1.0' };

export function msg03(text: string, extra: Record<string, unknown> = {}) {
  return { kind: 'message', messageId: crypto.randomUUID(), role: 'user', parts: [{ kind: 'text', text }], ...extra };
}

export function msg10(text: string, extra: Record<string, unknown> = {}) {
  return { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...extra };
}

/** POST a streaming request and collect every SSE `data:` payload until the server closes. */
export async function sse(
  url: string,
  method: string,
  params: unknown,
  headers: Record<string, string> = {},
): Promise<any[]> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
  });
  const text = await r.text();
  if (!(r.headers.get('content-type') ?? '').includes('text/event-stream')) return [JSON.parse(text)];
  return text
    .split('\n\n')
    .map((frame) => frame.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join(''))
    .filter((d) => d !== '')
    .map((d) => JSON.parse(d));
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Poll until `f()` is truthy (or throw after `ms`). */
export async function until<T>(f: () => T | Promise<T>, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(10);
  }
}
