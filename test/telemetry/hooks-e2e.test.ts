/**
 * Hook-dispatch spans through real sessions with real hook components (the hook-script fixture):
 * a policy denial nests under the tool call it refused; a compaction hook's run-inference chat
 * span nests under the compaction it serves.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { InMemorySpanExporter, instrumentSession, type ReadableSpan, type SessionTelemetry } from '../../runtime/telemetry/index.ts';
import type { Script } from '../provider/scripted-provider.ts';
import { closeOpened, type Kit } from '../loop/kit.ts';
import { openHookCapsule, type HookDef } from '../hooks/hook-capsule.ts';
import { readTrace } from '../../runtime/trace/read.ts';

let kit: Kit | undefined;
let tel: SessionTelemetry | undefined;
afterEach(closeOpened(() => ({ kit, tel })));

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
  it('every hook call has its duration on the trace (hook_call) and a `hook <name>` span under its dispatch', async () => {
    const { kit: k, exporter } = await open(
      [
        { name: 'watch', contract: 'binding: on-inference\n', script: {} },
        { name: 'later', contract: 'binding: on-inference\nexecution_mode: async\n', script: {} },
      ],
      { turns: [{ toolCalls: [{ name: 'echo', input: { text: 'hi' } }] }, { text: 'done' }] },
    );
    expect((await k.session.runTask(TASK)).exit).toBe('completed');
    await k.session.hooks.drain();
    const calls = readTrace(k.session.staged.workdir.trace).events.filter((e) => e.event_type === 'hook_call' && e.event === 'on-inference');
    // Two turns, each dispatched to both hooks.
    expect(calls.filter((e) => e.hook_name === 'watch')).toHaveLength(2);
    expect(calls.filter((e) => e.hook_name === 'later')).toHaveLength(2);
    for (const e of calls) {
      expect(e.mode).toBe(e.hook_name === 'watch' ? 'blocking' : 'async');
      expect(e.outcome).toBe('none');
      expect(typeof e.duration_ms).toBe('number');
      expect(Number(e.duration_ms)).toBeGreaterThanOrEqual(0); // recorded, not timed: timing is bench/'s
    }
    const spans = exporter.getFinishedSpans();
    const watch = spans.filter((s) => s.name === 'hook watch');
    const dispatches = spans.filter((s) => s.name === 'hook_dispatch on-inference');
    expect(watch).toHaveLength(2);
    for (const s of watch) {
      expect(dispatches.map(id)).toContain(parentOf(s));
      expect(s.attributes).toMatchObject({
        'capsule.hook.name': 'watch',
        'capsule.hook.handler': 'on-inference',
        'capsule.hook.mode': 'blocking',
        'capsule.hook.outcome': 'none',
      });
      expect(s.attributes['capsule.hook.duration_ms']).toBe(
        calls.find((c) => c.hook_name === 'watch' && c.duration_ms === s.attributes['capsule.hook.duration_ms'])?.duration_ms,
      );
    }
    // An async hook's calls run behind the task: their spans never hang under a dispatch.
    const later = spans.filter((s) => s.name === 'hook later');
    expect(later).toHaveLength(2);
    for (const s of later) {
      expect(s.attributes['capsule.hook.mode']).toBe('async');
      expect(dispatches.map(id)).not.toContain(parentOf(s));
    }
  }, 180_000); // two hook instances and the capsule's components start first

  it('a policy deny: hook_dispatch on-tool-call (decision, deny) and call_denied under execute_tool', async () => {
    const { kit: k, exporter } = await open(
      [
        {
          name: 'guard',
          contract: 'binding: on-tool-call\ncommit_policy: deny\n',
          script: { 'on-tool-call:decision': { ret: { tag: 'deny', val: 'not today' } } },
        },
      ],
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
      expect(
        s.every((x) => parentOf(x) === id(task!)),
        h,
      ).toBe(true);
    }
  });

  it("compaction: the hook's run-inference chat span nests under the compaction dispatch", async () => {
    const { kit: k, exporter } = await open(
      [
        {
          name: 'squash',
          contract: 'binding: on-compaction\ncommit_policy: replace-context\n',
          script: { 'on-compaction': { compact: { sourceId: 'compaction:1' } } },
        },
      ],
      {
        turns: [
          { text: 'a long answer', usage: { input: 70, output: 9 } },
          { text: 'SUMMARY', usage: { input: 50, output: 4 } },
        ],
      },
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
    expect(compaction!.attributes).toMatchObject({
      'capsule.compaction.outcome': 'replaced',
      'capsule.hook.name': 'squash',
      'capsule.compaction.messages_after': 1,
    });
    expect(typeof compaction!.attributes['capsule.compaction.tokens_after']).toBe('number');
    // A hook's completion records the provider's reported usage, like any turn.
    expect(hookChat.attributes).toMatchObject({ 'capsule.usage.source': 'provider', 'capsule.hook.name': 'squash', 'gen_ai.conversation.id': 'ctx-h' });
    expect(hookChat.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
  });
});
