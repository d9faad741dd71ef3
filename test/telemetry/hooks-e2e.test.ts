/**
 * Hook-dispatch spans through real sessions with real hook components (the hook-script fixture):
 * a policy denial nests under the tool call it refused; a compaction hook's run-inference chat
 * span nests under the compaction it serves.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { InMemorySpanExporter, instrumentSession, type ReadableSpan, type SessionTelemetry } from '../../runtime/telemetry/index.ts';
import type { Script } from '../provider/scripted-provider.ts';
import type { Kit } from '../loop/kit.ts';
import { openHookCapsule, type HookDef } from '../hooks/hook-capsule.ts';

let kit: Kit | undefined;
let tel: SessionTelemetry | undefined;
afterEach(async () => {
  await kit?.close().catch(() => {});
  await tel?.shutdown();
  kit = undefined;
  tel = undefined;
});

async function open(hooks: HookDef[], script: Script, extra = ''): Promise<{ kit: Kit; exporter: InMemorySpanExporter }> {
  kit = await openHookCapsule(hooks, script, extra, 'hooked');
  const exporter = new InMemorySpanExporter();
  tel = instrumentSession(kit.session, { setup: { exporter, simple: true, env: {} } });
  return { kit, exporter };
}

const TASK = { taskId: 't1', contextId: 'ctx-h', text: 'please echo hi', source: 'task_md' as const };
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const id = (s: ReadableSpan) => s.spanContext().spanId;

describe('hook dispatch spans in a session', () => {
  it('a policy deny: hook_dispatch on-tool-call (decision, deny) and call_denied under execute_tool', async () => {
    const { kit: k, exporter } = await open(
      [{ name: 'guard', contract: 'binding: on-tool-call\ncommit_policy: deny\n', script: { 'on-tool-call:decision': { ret: { tag: 'deny', val: 'not today' } } } }],
      { turns: [{ toolCalls: [{ name: 'echo', input: { text: 'hi' } }] }, { text: 'done' }] },
    );
    expect((await k.session.runTask(TASK)).exit).toBe('completed');
    const spans = exporter.getFinishedSpans();
    const one = (n: string) => spans.filter((s) => s.name === n);
    const [tool] = one('execute_tool echo');
    const decision = one('hook_dispatch on-tool-call').find((s) => s.attributes['capsule.hook.phase'] === 'decision')!;
    const [denied] = one('call_denied echo');
    expect(parentOf(decision)).toBe(id(tool!));
    expect(decision.attributes['capsule.hook.outcome']).toBe('deny');
    expect(parentOf(denied!)).toBe(id(tool!));
    expect(denied!.attributes).toMatchObject({ 'capsule.hook.name': 'guard', 'capsule.denied.reason': 'not today', 'capsule.denied.kind': 'tool' });
    expect(tool!.attributes).toMatchObject({ 'capsule.tool.status': 'denied', 'error.type': 'denied' });
    // Every handler the loop dispatched has its span under the task.
    const [task] = one('invoke_agent hooked');
    for (const h of ['on-task-start', 'on-inference', 'on-task-end']) {
      const s = one(`hook_dispatch ${h}`);
      expect(s.length, h).toBeGreaterThan(0);
      expect(s.every((x) => parentOf(x) === id(task!)), h).toBe(true);
    }
  });

  it("compaction: the hook's run-inference chat span nests under the compaction dispatch", async () => {
    const { kit: k, exporter } = await open(
      [{ name: 'squash', contract: 'binding: on-compaction\ncommit_policy: replace-context\n', script: { 'on-compaction': { compact: { sourceId: 'compaction:1' } } } }],
      { turns: [{ text: 'a long answer', usage: { input: 70, output: 9 } }, { text: 'SUMMARY', usage: { input: 50, output: 4 } }] },
      'context:\n  max_tokens: 60\n',
    );
    expect((await k.session.runTask(TASK)).exit).toBe('completed');
    const spans = exporter.getFinishedSpans();
    const [compaction] = spans.filter((s) => s.name === 'compaction');
    const [dispatch] = spans.filter((s) => s.name === 'hook_dispatch on-compaction');
    const hookChat = spans.find((s) => s.name === 'chat claude-test' && s.attributes['capsule.inference.origin'] === 'hook:squash')!;
    expect(parentOf(dispatch!)).toBe(id(compaction!));
    expect(parentOf(hookChat)).toBe(id(dispatch!));
    expect(dispatch!.attributes['capsule.hook.outcome']).toBe('replace-context');
    expect(compaction!.attributes).toMatchObject({ 'capsule.compaction.outcome': 'replaced', 'capsule.hook.name': 'squash', 'capsule.compaction.messages_after': 1 });
    expect(typeof compaction!.attributes['capsule.compaction.tokens_after']).toBe('number');
    // A hook's completion records the provider's reported usage, like any turn.
    expect(hookChat.attributes).toMatchObject({ 'capsule.usage.source': 'provider', 'capsule.hook.name': 'squash', 'gen_ai.conversation.id': 'ctx-h' });
    expect(hookChat.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
  });
});
