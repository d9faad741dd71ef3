/** Shared helpers for the A2A tests: raw JSON-RPC and SSE over real HTTP. */
import { startA2AServer, type A2AServer, type A2AServerOptions } from '../../runtime/a2a/server/server.ts';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';
import { Role, type Message } from '@a2a-js/sdk';

export const servers: A2AServer[] = [];

export async function serve(executor: TaskExecutor, o: Partial<Omit<A2AServerOptions, 'executor'>> = {}): Promise<A2AServer> {
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

export async function rpc(url: string, method: string, params: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
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
export async function sse(url: string, method: string, params: unknown, headers: Record<string, string> = {}): Promise<any[]> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
  });
  const text = await r.text();
  if (!(r.headers.get('content-type') ?? '').includes('text/event-stream')) return [JSON.parse(text)];
  return text
    .split('\n\n')
    .map((frame) =>
      frame
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join(''),
    )
    .filter((d) => d !== '')
    .map((d) => JSON.parse(d));
}

/**
 * Resolves with `f()` once it is truthy, re-checked after each change the server reports (task
 * events, subscribers added or removed): no timer, no polling. A condition never met fails the test
 * by its timeout.
 */
export function until<T>(s: A2AServer, f: () => T | Promise<T>): Promise<NonNullable<T>> {
  return new Promise((resolve, reject) => {
    let checking = false;
    let again = false;
    let settled = false;
    const check = async (): Promise<void> => {
      if (checking) {
        again = true;
        return;
      }
      checking = true;
      try {
        do {
          again = false;
          const v = await f();
          if (v) {
            settled = true;
            off();
            resolve(v as NonNullable<T>);
            return;
          }
        } while (again);
      } catch (e) {
        settled = true;
        off();
        reject(e);
      } finally {
        checking = false;
      }
    };
    const off = s.onChange(() => {
      if (!settled) void check();
    });
    void check();
  });
}

/** A user text message as the SDK's clients take it (1.0 shape). */
export function userMessage(text: string, extra: Partial<Message> = {}): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}
