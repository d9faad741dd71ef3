/** murmur:message/send from a real script capsule component to a real A2A server. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startA2AServer, type A2AServer } from '../../runtime/a2a/server/server.ts';
import { createAuthenticator } from '../../runtime/a2a/server/auth.ts';
import type { TaskContext } from '../../runtime/a2a/core/executor.ts';
import type { ScriptSession } from '../../runtime/script/script-session.ts';
import { toPeerTask } from '../../runtime/a2a/peers/client.ts';
import { toCoreState } from '../../runtime/a2a/core/wire.ts';
import { demoYaml, program, results, task, traceOf, useScriptSessions } from './helpers.ts';

let peer: A2AServer;
const seen: TaskContext[] = [];
let tcp: TcpServer;
let tcpPort = 0;
let connections = 0;
const sessions = useScriptSessions();

// The sender's credential for the peer, where the runtime looks for it (credentials.ts): the peer
// honours the trust a task is stamped with only from a caller it knows as a trusted peer.
const PEER_KEY = `peer-${crypto.randomUUID()}`;
const tokensDir = mkdtempSync(join(tmpdir(), 'peer-tokens-'));
writeFileSync(join(tokensDir, '127.0.0.1'), PEER_KEY);
const savedTokensDir = process.env.MURMUR_A2A_PEER_TOKENS_DIR;
const peerAuth = createAuthenticator({ anonymous: true, apiKeys: [{ name: 'sender', key: PEER_KEY }], trustedCallers: ['apikey:sender'] });

beforeAll(async () => {
  process.env.MURMUR_A2A_PEER_TOKENS_DIR = tokensDir;
  peer = await startA2AServer({
    auth: peerAuth,
    card: { name: 'peer', version: '0.1.0', description: 'echo peer' },
    acceptance: 'queue',
    queueDepth: 16,
    executor: async (ctx) => {
      seen.push(ctx);
      return { state: 'completed', text: `got: ${ctx.text}` };
    },
  });
  tcp = createTcpServer((sock) => {
    connections++;
    sock.destroy();
  });
  await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
  tcpPort = (tcp.address() as { port: number }).port;
});

afterAll(async () => {
  if (savedTokensDir === undefined) delete process.env.MURMUR_A2A_PEER_TOKENS_DIR;
  else process.env.MURMUR_A2A_PEER_TOKENS_DIR = savedTokensDir;
  await peer?.close();
  tcp?.close();
});

function session(capabilities: string): Promise<ScriptSession> {
  return sessions.open(demoYaml({ capabilities }));
}

describe('message/send', () => {
  it('sends a task to an allowlisted peer, stamped with the sending task’s trust', async () => {
    const s = await session(`  network:\n    allow: ["127.0.0.1:${peer.port}"]`);
    const out = await s.runTask(
      task(program({ op: 'send', url: peer.url, text: 'hello peer', messageId: 'm-1', contextId: 'ctx-peer' }), { trust: 'trusted' }),
    );
    expect(out.exit).toBe('completed');
    const [sent] = results(out.text);
    expect(sent!.ok).toBe(true);
    expect(sent!.value.contextId).toBe('ctx-peer');
    expect(typeof sent!.value.taskId).toBe('string');
    expect(['submitted', 'working', 'completed']).toContain(sent!.value.state);
    await peer.idle();
    const got = seen.find((c) => c.text === 'hello peer');
    expect(got).toMatchObject({ origin: 'peer', trust: 'trusted', messageId: 'm-1', contextId: 'ctx-peer', taskId: sent!.value.taskId });
    expect(traceOf(s.staged).find((e) => e.event_type === 'a2a_send')).toMatchObject({
      peer_url: peer.url,
      message_id: 'm-1',
      peer_task_id: sent!.value.taskId,
      context_id: 'ctx-peer',
    });
  });

  it('refuses a peer outside capabilities.network.allow with the exact policy text and no connection', async () => {
    const s = await session(`  network:\n    allow: ["127.0.0.1:${peer.port}"]`);
    const url = `http://127.0.0.1:${tcpPort}/`;
    const before = connections;
    const tasksBefore = peer.stats().tasks;
    const out = await s.runTask(task(program({ op: 'send', url, text: 'nope' }, { op: 'ping' })));
    const [refused, ping] = results(out.text);
    expect(refused).toEqual({ op: 'send', ok: false, error: `network policy: '${url}' not in capabilities.network.allow` });
    expect(ping!.value).toBe('pong');
    expect(connections).toBe(before);
    expect(peer.stats().tasks).toBe(tasksBefore);
    expect(traceOf(s.staged).find((e) => e.event_type === 'a2a_send')).toMatchObject({
      peer_url: url,
      error: `network policy: '${url}' not in capabilities.network.allow`,
    });
  });

  it('a capsule with no network grant cannot reach even a running peer', async () => {
    const s = await session('  filesystem:\n    scope: .');
    const tasksBefore = peer.stats().tasks;
    const out = await s.runTask(task(program({ op: 'send', url: peer.url, text: 'nope' })));
    expect(results(out.text)[0]!.error).toBe(`network policy: '${peer.url}' not in capabilities.network.allow`);
    expect(peer.stats().tasks).toBe(tasksBefore);
  });

  it('returns the peer’s own state for the send, as it answered: a busy single-task peer’s rejected comes through', async () => {
    let release!: () => void;
    const busy = await startA2AServer({
      card: { name: 'busy', version: '0.1.0', description: 'one task at a time' },
      auth: peerAuth,
      acceptance: 'single',
      queueDepth: 1,
      executor: async () => {
        await new Promise<void>((r) => (release = r));
        return { state: 'completed', text: 'done' };
      },
    });
    try {
      const s = await session(`  network:\n    allow: ["127.0.0.1:${busy.port}"]`);
      const out = await s.runTask(task(program({ op: 'send', url: busy.url, text: 'first' }, { op: 'send', url: busy.url, text: 'second' })));
      const [first, second] = results(out.text);
      expect(['submitted', 'working']).toContain(first!.value.state);
      expect(second!.ok).toBe(true);
      expect(second!.value.state).toBe('rejected');
      expect(
        traceOf(s.staged)
          .filter((e) => e.event_type === 'a2a_send')
          .map((e) => e.state),
      ).toEqual([first!.value.state, 'rejected']);
    } finally {
      release?.();
      await busy.close();
    }
  });
});

describe('peer task states', () => {
  it('every A2A task state a peer answers maps to the same state name (the seven of the message/send table)', () => {
    for (const state of ['submitted', 'working', 'input-required', 'completed', 'failed', 'rejected', 'canceled'] as const) {
      const t = {
        id: 't',
        contextId: 'c',
        status: { state: toCoreState(state), message: undefined, timestamp: undefined },
        artifacts: [],
        history: [],
        metadata: undefined,
      } as unknown as Parameters<typeof toPeerTask>[0];
      expect(toPeerTask(t).state).toBe(state);
    }
  });
});
