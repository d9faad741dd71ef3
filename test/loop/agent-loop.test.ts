import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readTrace } from '../../runtime/trace/read.ts';
import { ECHO_TOOL, capsuleYaml, driverDef, openKit, type Kit } from './kit.ts';

let kit: Kit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

function events(k: Kit) {
  return readTrace(k.session.staged.workdir.trace).events;
}

describe('agent loop, end to end through a real driver component and real HTTP', () => {
  for (const api of ['anthropic', 'openai'] as const) {
    it(`${api}: a tool call, then the final answer`, async () => {
      kit = await openKit({
        api,
        yaml: capsuleYaml({ api }),
        artifacts: [driverDef(api), ECHO_TOOL],
        script: {
          turns: [
            { toolCalls: [{ name: 'echo', input: { text: 'hi' } }], usage: { input: 100, output: 10 } },
            { text: 'The echo said hi.', usage: { input: 120, output: 8, cacheRead: 90 } },
          ],
        },
      });
      const r = await kit.session.runTask({ taskId: 't1', contextId: 'ctx-1', text: 'please echo hi', source: 'task_md' });
      expect(r.exit).toBe('completed');
      expect(r.text).toBe('The echo said hi.');
      expect(readFileSync(join(kit.session.staged.workdir.dir, 'out', 'result.txt'), 'utf8')).toBe('The echo said hi.');
      const ev = events(kit);
      const inf = ev.filter((e) => e.event_type === 'inference');
      expect(inf.map((e) => e.decision)).toEqual(['tool_call', 'end_turn']);
      expect(inf[0]!.reported_usage).toEqual({ input_tokens: 100, output_tokens: 10 });
      if (api === 'anthropic') expect(inf[1]!.reported_usage).toEqual({ input_tokens: 120, output_tokens: 8, cached_tokens: 90 });
      else expect(inf[1]!.reported_usage).toEqual({ input_tokens: 120, output_tokens: 8, cached_tokens: 90 });
      const call = ev.find((e) => e.event_type === 'tool_call')!;
      expect(call).toMatchObject({ tool_name: 'echo', status: 'ok', input: { text: 'hi' }, state_effect: 'read' });
      expect(call.resource_id).toMatch(/^echo:/);
      // The second request carried the tool result back.
      const second = kit.provider.requests.filter((q) => q.turn !== undefined)[1]!.body as Record<string, unknown>;
      expect(JSON.stringify(second)).toContain('\\"calls\\":1');
      // prompt_cache_key: forwarded to OpenAI only; the Anthropic API would reject it.
      const first = kit.provider.requests[0]!.body as Record<string, unknown>;
      if (api === 'openai') {
        expect(first.prompt_cache_key).toBe('kit-capsule:1.0.0:ctx-1');
        // The limit goes in max_completion_tokens (Chat Completions deprecated max_tokens).
        expect(first.max_completion_tokens).toBe(8192);
        expect(first).not.toHaveProperty('max_tokens');
      } else {
        expect(first).not.toHaveProperty('prompt_cache_key');
        expect(first.max_tokens).toBe(8192);
      }
      expect(ev.map((e) => e.event_type)).toEqual(['session_start', 'task_start', 'inference', 'tool_call', 'inference', 'task_end']);
      expect(new Set(ev.map((e) => e.session_id))).toEqual(new Set([kit.session.sessionId]));
    });
  }

  it('a driver failure ends the task failed, not ok', async () => {
    kit = await openKit({
      yaml: capsuleYaml(),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: { turns: [{ error: { status: 529, type: 'overloaded_error', message: 'overloaded' } }], onExhausted: 'repeat-last' },
    });
    const r = await kit.session.runTask({ taskId: 't1', contextId: 'c', text: 'x', source: 'task_md' });
    expect(r.exit).toBe('failed');
    expect(r.reason).toMatch(/HTTP 529/);
    expect(events(kit).find((e) => e.event_type === 'task_end')).toMatchObject({ exit_status: 'failed' });
  });

  it('hitting max_turns ends the task max_turns_reached, not ok', async () => {
    kit = await openKit({
      yaml: capsuleYaml({ inference: '  max_turns: 2' }),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: { turns: [{ toolCalls: [{ name: 'echo', input: { text: 'a' } }] }], onExhausted: 'repeat-last' },
    });
    const r = await kit.session.runTask({ taskId: 't1', contextId: 'c', text: 'loop forever', source: 'task_md' });
    expect(r.exit).toBe('max_turns_reached');
    expect(r.turns).toBe(2);
    expect(readFileSync(join(kit.session.staged.workdir.dir, 'out', 'result.txt'), 'utf8')).toBe('error: inference loop exceeded 2 turns');
  });

  it('an unknown tool name goes back to the model as an error result and the session goes on', async () => {
    kit = await openKit({
      yaml: capsuleYaml(),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: { turns: [{ toolCalls: [{ name: 'no-such-tool', input: {} }] }, { text: 'ok' }] },
    });
    const r = await kit.session.runTask({ taskId: 't1', contextId: 'c', text: 'x', source: 'task_md' });
    expect(r.exit).toBe('completed');
    const second = JSON.stringify(kit.provider.requests[1]!.body);
    expect(second).toContain("there is no tool named 'no-such-tool'");
    expect(second).toContain('"is_error":true');
  });
});

describe('openai driver config', () => {
  it('max_tokens_field "max_tokens" sends the limit under the older name, for servers without max_completion_tokens', async () => {
    const yaml = capsuleYaml({ api: 'openai' }).replace(
      '  driver: {artifact: driver-openai}',
      '  driver: {artifact: driver-openai, config: {max_tokens_field: max_tokens}}',
    );
    const k = await openKit({ api: 'openai', yaml, artifacts: [driverDef('openai'), ECHO_TOOL], script: { turns: [{ text: 'ok' }] } });
    try {
      expect((await k.session.runTask({ taskId: 't', contextId: 'c', text: 'hi', source: 'task_md' })).exit).toBe('completed');
      const body = k.provider.requests[0]!.body as Record<string, unknown>;
      expect(body.max_tokens).toBe(8192);
      expect(body).not.toHaveProperty('max_completion_tokens');
    } finally {
      await k.close();
    }
  });
});
