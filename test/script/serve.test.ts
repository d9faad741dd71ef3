/**
 * A script capsule served over A2A (scriptTaskExecutor on a real startA2AServer), driven by the
 * real A2A client: the answer comes back as the task result, and a tool's request-input becomes
 * an input-required task that a follow-up message answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { followTask, sendMessage } from '../../runtime/a2a/peers/client.ts';
import { startA2AServer, type A2AServer } from '../../runtime/a2a/server/server.ts';
import { ScriptSession } from '../../runtime/script/script-session.ts';
import { scriptTaskExecutor } from '../../runtime/script/serve.ts';
import { demoYaml, program, scriptRegistry, stageYaml, traceOf } from './helpers.ts';

let session: ScriptSession;
let server: A2AServer;
let allow: string[];

beforeAll(async () => {
  const registry = await scriptRegistry();
  const staged = await stageYaml(registry, demoYaml({ artifacts: '  - name: probe-tool\n    version: 1.0.0' }));
  session = await ScriptSession.open(staged);
  server = await startA2AServer({
    card: { name: 'demo', version: '0.1.0', description: 'script capsule' },
    executor: scriptTaskExecutor(session),
    acceptance: 'queue',
    queueDepth: 8,
  });
  allow = [`127.0.0.1:${server.port}`];
});

afterAll(async () => {
  await server?.close();
  await session?.close();
});

describe('a served script capsule', () => {
  it('answers an A2A task with the capsule’s out/result.txt', async () => {
    const r = await sendMessage({ peerUrl: server.url, allow, text: program({ op: 'invoke', name: 'echo-tool', data: 'over a2a' }), wait: true });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.state).toBe('completed');
    const results = JSON.parse(r.text!).results;
    expect(JSON.parse(results[0].value.data)).toMatchObject({ echo: 'over a2a' });
    const trace = traceOf(session.staged);
    expect(trace.find((e) => e.event_type === 'task_start' && e.task_id === r.taskId)).toMatchObject({ source: 'a2a', trust: 'untrusted' });
  });

  it('a failing capsule fails the A2A task with the reason', async () => {
    const r = await sendMessage({ peerUrl: server.url, allow, text: program({ op: 'trap' }), wait: true });
    expect(r.ok && r.state).toBe('failed');
    expect(r.ok && r.statusText).toMatch(/demo: run\.run trapped.*E-HOST-005/);
  });

  it('a tool’s request-input makes the task input-required; the reply reaches the tool', async () => {
    const sent = await sendMessage({
      peerUrl: server.url,
      allow,
      text: program({ op: 'invoke', name: 'probe-tool', data: { op: 'ask', prompt: 'favourite colour?' } }),
    });
    expect(sent.ok).toBe(true);
    if (!sent.ok) return;
    const waiting = await followTask({ peerUrl: server.url, allow, taskId: sent.taskId, deadlineMs: 30_000 });
    expect(waiting.ok && waiting.state).toBe('input-required');
    expect(waiting.ok && waiting.statusText).toBe('favourite colour?');
    const reply = await sendMessage({ peerUrl: server.url, allow, taskId: sent.taskId, contextId: sent.contextId, text: 'blue' });
    expect(reply.ok).toBe(true);
    const done = await followTask({ peerUrl: server.url, allow, taskId: sent.taskId, deadlineMs: 30_000 });
    expect(done.ok && done.state).toBe('completed');
    const results = JSON.parse((done.ok && done.text) || '{}').results;
    expect(JSON.parse(results[0].value.data)).toEqual({ ok: true, value: 'blue' });
  });
});
