/**
 * Graceful drain of a `mur serve` process on SIGTERM: /readyz 503 and new tasks refused with a
 * retryable 503 at once, the running task finishes and its caller gets the answer, exit 0; a task
 * still running when the drain budget ends is failed with a reason.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sendMessage } from '../../runtime/a2a/peers/client.ts';
import { API_KEY, ECHO_TOOL, PROBE_TOOL, capsuleYaml, driverDef, makeRegistry, tmp, type ArtifactDef } from '../loop/kit.ts';
import { startScriptedProvider, type ScriptTurn } from '../provider/scripted-provider.ts';
import { freePort, gate, printed, serve, type Served } from './serve-kit.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

async function served(turns: ScriptTurn[], args: string[] = [], tool: ArtifactDef = ECHO_TOOL): Promise<Served> {
  const provider = await startScriptedProvider(turns);
  const registry = await makeRegistry([driverDef('anthropic'), tool]);
  const capsule = tmp('drain-');
  writeFileSync(
    join(capsule, 'murmur.yaml'),
    capsuleYaml({ name: 'drainer', tools: [tool.name], extra: 'lifecycle:\n  task_acceptance: queue\n  queue_depth: 4\n' }),
  );
  const s = await serve(capsule, {
    registry,
    workRoot: tmp('drain-work-'),
    env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
    args,
  });
  cleanup.push(
    () => s.stop(),
    () => provider.stop(),
  );
  return s;
}

describe('graceful drain (SIGTERM)', () => {
  it('SIGTERM in the middle of a task: readyz 503 and new tasks refused (retryable) at once, the caller still gets the answer, exit 0', async () => {
    const g = gate();
    const s = await served([{ hold: g.hold, text: 'finished despite SIGTERM' }]);
    const answer = sendMessage({ peerUrl: s.url, text: 'work', allow: [s.url], wait: true });
    await g.arrival; // the task is in its provider call
    s.proc.kill('SIGTERM');
    await printed(s, /SIGTERM: draining/);
    const ready = await fetch(new URL('/readyz', s.url));
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ ready: false, draining: true });
    const refused = await fetch(s.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'message/send',
        params: { message: { kind: 'message', messageId: 'm-late', role: 'user', parts: [{ kind: 'text', text: 'too late' }] } },
      }),
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/draining/);
    g.open();
    const r = await answer;
    expect(r.ok && r.state).toBe('completed');
    expect(r.ok && r.text).toBe('finished despite SIGTERM');
    expect(await s.exited).toBe(0);
  });

  it('a task still running when the drain budget ends is failed with a reason, its caller told, exit 0', async () => {
    const g = gate();
    cleanup.push(async () => g.open());
    const s = await served([{ hold: g.hold, text: 'never in time' }], ['--drain-secs', '1']);
    const answer = sendMessage({ peerUrl: s.url, text: 'slow work', allow: [s.url], wait: true });
    await g.arrival;
    s.proc.kill('SIGTERM');
    const r = await answer;
    expect(r.ok && r.state).toBe('failed');
    expect(JSON.stringify(r)).toMatch(/drain budget ran out/);
    expect(await s.exited).toBe(0);
    expect(s.output()).toMatch(/1 unfinished task\(s\) failed/);
  });

  it('a task waiting for input is visible: /readyz and capsule_tasks_waiting_for_input say the session is blocked on input', async () => {
    const metricsPort = await freePort();
    const s = await served(
      [{ toolCalls: [{ name: 'probe', input: { op: 'ask', prompt: 'Which colour?' } }] }, { text: 'got it' }],
      ['--metrics-port', String(metricsPort)],
      PROBE_TOOL,
    );
    const first = await sendMessage({ peerUrl: s.url, text: 'paint it', allow: [s.url], wait: true });
    expect(first.ok && first.state).toBe('input-required');
    if (!first.ok) return;
    expect(await (await fetch(new URL('/readyz', s.url))).json()).toMatchObject({ waiting_for_input: 1, blocked_on_input: true });
    expect(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()).toMatch(/capsule_tasks_waiting_for_input\{capsule="drainer"\} 1/);
    const reply = await sendMessage({ peerUrl: s.url, text: 'blue', taskId: first.taskId, contextId: first.contextId, allow: [s.url], wait: true });
    expect(reply.ok && reply.state).toBe('completed');
    expect(await (await fetch(new URL('/readyz', s.url))).json()).toMatchObject({ waiting_for_input: 0, blocked_on_input: false });
    expect(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()).toMatch(/capsule_tasks_waiting_for_input\{capsule="drainer"\} 0/);
  }, 240_000); // the first build of the sandbox-probe fixture is slow on a loaded machine
});
