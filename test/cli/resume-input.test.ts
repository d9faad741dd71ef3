/**
 * A task waiting for input outlives its process (docs/a2a.md "Restart"): its resume point is in the
 * durable store, so after `kill -9` (or a SIGTERM stop: sleep-restart.test.ts) a new `mur serve` on
 * the same store adopts the task, still `input-required`, and the caller's reply re-runs the pending
 * tool call with the reply queued. Real `mur serve` processes, the real sandbox-probe tool component
 * (its `ask` op calls request-input), SQLite and a real PostgreSQL server.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { getTask, sendMessage } from '../../runtime/a2a/peers/client.ts';
import { readTrace } from '../../runtime/trace/read.ts';
import { API_KEY, PROBE_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider, type ScriptTurn } from '../provider/scripted-provider.ts';
import { parseExposition } from '../telemetry/prom-text.ts';
import { rpc, V1 } from '../a2a/helpers.ts';
import { startPostgres } from '../support/postgres.ts';
import { freePort, serve } from './serve-kit.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

const ASK: ScriptTurn = { toolCalls: [{ name: 'probe', input: { op: 'ask', prompt: 'Which colour?' } }] };

let registry: Promise<string> | undefined;
/** A capsule folder of its own (a test may change its manifest between launches). */
async function capsule(lifecycle = ''): Promise<{ dir: string; registry: string }> {
  registry ??= makeRegistry([driverDef('anthropic'), PROBE_TOOL]);
  const dir = tmp('resume-input-');
  writeCapsule(dir, lifecycle);
  return { dir, registry: await registry };
}

function writeCapsule(dir: string, lifecycle: string): void {
  const extra = `lifecycle:\n  task_acceptance: queue\n${lifecycle}`;
  writeFileSync(join(dir, 'murmur.yaml'), capsuleYaml({ name: 'painter', tools: [PROBE_TOOL.name], extra }));
}

async function served(c: { dir: string; registry: string }, store: string, turns: ScriptTurn[], args: string[] = []) {
  const provider = await startScriptedProvider(turns);
  cleanup.push(() => provider.stop());
  const workRoot = tmp('resume-input-work-');
  const s = await serve(c.dir, {
    registry: c.registry,
    workRoot,
    env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
    args: ['--store', store, ...args],
  });
  cleanup.push(() => s.stop());
  const trace = () => {
    const session = /\(session (\S+),/.exec(s.output())![1]!;
    return readTrace(join(workRoot, session, 'trace.jsonl')).events;
  };
  return { s, provider, trace };
}

/**
 * `served` with `--metrics-port` on a port picked now. freePort closes its probe before mur serve
 * binds the port, and another test's process can take it in between (EADDRINUSE, seen once in a
 * CI run of the whole suite): then a new port is picked, up to a few times.
 */
async function servedWithMetrics(c: { dir: string; registry: string }, store: string, turns: ScriptTurn[]) {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return { port, ...(await served(c, store, turns, ['--metrics-port', String(port)])) };
    } catch (e) {
      if (attempt >= 5 || !/EADDRINUSE/.test(String(e))) throw e;
    }
  }
}

/** The tool result the provider got after the restart: the tool's output made from the reply. */
function toolResultOf(body: unknown): string {
  const messages = (body as { messages: Array<{ role: string; content: unknown }> }).messages;
  return JSON.stringify(messages.at(-1)!.content);
}

/** Asks, kills the first process with -9, and restarts on the same store; the reply then completes the task. */
async function killWhileWaitingThenReply(store: string): Promise<void> {
  const c = await capsule();
  const one = await served(c, store, [ASK]);
  const asked = await sendMessage({ peerUrl: one.s.url, text: 'paint it', allow: [one.s.url], wait: true });
  expect(asked.ok && asked.state).toBe('input-required');
  if (!asked.ok) return;
  one.s.proc.kill('SIGKILL');
  await one.s.exited;

  const two = await served(c, store, [{ text: 'painted blue' }]);
  expect(two.s.output()).not.toMatch(/unfinished task\(s\) from before the restart marked failed/);
  expect(two.s.output()).toMatch(/1 task\(s\) left waiting for input before the restart/);
  const reply = await sendMessage({ peerUrl: two.s.url, text: 'blue', taskId: asked.taskId, contextId: asked.contextId, allow: [two.s.url], wait: true });
  expect(reply.ok && [reply.state, reply.taskId, reply.contextId, reply.text]).toEqual(['completed', asked.taskId, asked.contextId, 'painted blue']);
  expect(toolResultOf(two.provider.requests.at(-1)!.body)).toContain('blue');
  // The trace of the new process says the task resumed at the pending call, then ended.
  const all = two.trace();
  const events = all.slice(all.findIndex((e) => e.event_type === 'task_resumed' && e.task_id === asked.taskId));
  expect(events.map((e) => e.event_type).filter((t) => !t.startsWith('span') && t !== 'hook_call')).toEqual([
    'task_resumed',
    'tool_call',
    'inference',
    'task_end',
  ]);
  expect(events[0]).toMatchObject({ tool_name: 'probe', turn: 1, context_id: asked.contextId });
  // The task's totals count both processes: the turn that asked and the one that answered.
  expect(events.at(-1)).toMatchObject({ exit_status: 'ok', turns: 2, tool_calls: 1 });
}

describe('a task waiting for input across kill -9 and a restart on the same store', () => {
  it('SQLite: the task is still input-required after the restart, and the reply resumes the tool call and completes it', async () => {
    await killWhileWaitingThenReply(join(tmp('resume-input-store-'), 'tasks.db'));
  }, 240_000);

  it('PostgreSQL: the same, the new replica claiming the task of the one that died', async () => {
    const pg = await startPostgres();
    cleanup.push(() => pg.stop());
    await killWhileWaitingThenReply(await pg.url('murmur_resume'));
  }, 240_000);

  it('PostgreSQL, two replicas: the one running the task stops (SIGTERM), and the reply at the other, still serving, resumes the task there', async () => {
    const pg = await startPostgres();
    cleanup.push(() => pg.stop());
    const url = await pg.url('murmur_resume_two');
    const c = await capsule();
    const a = await served(c, url, [ASK]);
    const b = await served(c, url, [{ text: 'painted blue' }]);
    const asked = await sendMessage({ peerUrl: a.s.url, text: 'paint it', allow: [a.s.url], wait: true });
    expect(asked.ok && asked.state).toBe('input-required');
    if (!asked.ok) return;
    a.s.proc.kill('SIGTERM');
    expect(await a.s.exited).toBe(0);
    expect(a.s.output()).toMatch(/1 task\(s\) waiting for input left for the next start/);

    const reply = await sendMessage({ peerUrl: b.s.url, text: 'blue', taskId: asked.taskId, contextId: asked.contextId, allow: [b.s.url], wait: true });
    expect(reply.ok && [reply.state, reply.taskId, reply.text]).toEqual(['completed', asked.taskId, 'painted blue']);
    expect(toolResultOf(b.provider.requests.at(-1)!.body)).toContain('blue');
    expect(b.trace().some((e) => e.event_type === 'task_resumed' && e.task_id === asked.taskId)).toBe(true);
  }, 240_000);

  it("another caller's reply to the resumed task is refused as not found, and the owner's reply completes it", async () => {
    const c = await capsule();
    const keys = join(tmp('resume-input-keys-'), 'keys');
    writeFileSync(keys, 'alice:alice-key-0123456789\nbob:bob-key-0123456789\n');
    const store = join(tmp('resume-input-store-'), 'tasks.db');
    const one = await served(c, store, [ASK], ['--api-keys', keys]);
    const alice = { bearer: 'alice-key-0123456789' };
    const asked = await sendMessage({ peerUrl: one.s.url, text: 'paint it', allow: [one.s.url], wait: true, ...alice });
    expect(asked.ok && asked.state).toBe('input-required');
    if (!asked.ok) return;
    one.s.proc.kill('SIGTERM');
    expect(await one.s.exited).toBe(0);

    const two = await served(c, store, [{ text: 'painted blue' }], ['--api-keys', keys]);
    const at = { peerUrl: two.s.url, allow: [two.s.url] };
    const stolen = await sendMessage({ ...at, text: 'red', taskId: asked.taskId, contextId: asked.contextId, wait: true, bearer: 'bob-key-0123456789' });
    expect(stolen.ok).toBe(false);
    expect(JSON.stringify(stolen)).toMatch(/not found/);
    expect(two.provider.requests).toHaveLength(0);
    const reply = await sendMessage({ ...at, text: 'blue', taskId: asked.taskId, contextId: asked.contextId, wait: true, ...alice });
    expect(reply.ok && [reply.state, reply.text]).toEqual(['completed', 'painted blue']);
    expect(toolResultOf(two.provider.requests.at(-1)!.body)).toContain('blue');
  }, 240_000);

  it('lifecycle.input_timeout_secs counts from when the task asked: a restart after the deadline finds it failed with the input timeout, and a reply is refused', async () => {
    const c = await capsule();
    const store = join(tmp('resume-input-store-'), 'tasks.db');
    const one = await served(c, store, [ASK]);
    const asked = await sendMessage({ peerUrl: one.s.url, text: 'paint it', allow: [one.s.url], wait: true });
    expect(asked.ok && asked.state).toBe('input-required');
    if (!asked.ok) return;
    const askedAt = Date.parse((await rpc(one.s.url, 'GetTask', { id: asked.taskId }, V1)).body.result.status.timestamp);
    one.s.proc.kill('SIGKILL');
    await one.s.exited;
    // The next launch allows 1 s for a reply, and starts once that second since the ask is over:
    // the deadline is the thing under test, so the test waits for it, not for another process.
    writeCapsule(c.dir, '  input_timeout_secs: 1\n');
    while (Date.now() <= askedAt + 1000) await new Promise((r) => setTimeout(r, askedAt + 1001 - Date.now()));

    const two = await served(c, store, [{ text: 'never asked for' }]);
    expect(two.s.output()).not.toMatch(/left waiting for input before the restart/);
    const lost = await getTask({ peerUrl: two.s.url, taskId: asked.taskId, allow: [two.s.url] });
    expect(lost.ok && lost.state).toBe('failed');
    expect(lost.ok && lost.statusText).toMatch(/input timeout: task \S+ got no reply within 1s/);
    const reply = await sendMessage({ peerUrl: two.s.url, text: 'blue', taskId: asked.taskId, contextId: asked.contextId, allow: [two.s.url], wait: true });
    expect(reply.ok).toBe(false);
    expect(JSON.stringify(reply)).toMatch(/has ended|failed/);
    expect(two.provider.requests).toHaveLength(0);
  }, 240_000);

  it('capsule_idle_seconds: a task waiting for input with its resume point stored does not keep the capsule busy, before or after a restart', async () => {
    const c = await capsule();
    const store = join(tmp('resume-input-store-'), 'tasks.db');
    const idle = async (metricsPort: number) => {
      const x = parseExposition(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text());
      return { seconds: x.get('capsule_idle_seconds', { capsule: 'painter' })!, waiting: x.get('capsule_tasks_waiting_for_input', { capsule: 'painter' })! };
    };
    const one = await servedWithMetrics(c, store, [ASK]);
    const port1 = one.port;
    const asked = await sendMessage({ peerUrl: one.s.url, text: 'paint it', allow: [one.s.url], wait: true });
    expect(asked.ok && asked.state).toBe('input-required');
    if (!asked.ok) return;
    const waiting = await idle(port1);
    expect(waiting.waiting).toBe(1);
    expect(waiting.seconds).toBeGreaterThan(0);
    one.s.proc.kill('SIGTERM');
    expect(await one.s.exited).toBe(0);

    const two = await servedWithMetrics(c, store, [{ text: 'painted blue' }]);
    const port2 = two.port;
    const adopted = await idle(port2);
    expect(adopted.waiting).toBe(1);
    expect(adopted.seconds).toBeGreaterThan(0);
    const reply = await sendMessage({ peerUrl: two.s.url, text: 'blue', taskId: asked.taskId, contextId: asked.contextId, allow: [two.s.url], wait: true });
    expect(reply.ok && reply.state).toBe('completed');
    expect((await idle(port2)).waiting).toBe(0);
  }, 240_000);
});
