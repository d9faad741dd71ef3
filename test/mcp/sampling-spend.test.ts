/**
 * Issue 40: an MCP server's sampling request is metered like every other driver call. Against the
 * reference server `@modelcontextprotocol/server-everything` (its `trigger-sampling-request` tool,
 * `sampling: driver`), the real Anthropic driver component and the scripted provider: the sampling
 * call's tokens are part of the session's spend (trace, spend meter, `capsule_spend_session_tokens`),
 * and a sampling call the spend ceiling cannot admit is refused with an MCP error before it reaches
 * the provider, after which the task ends `spend_ceiling_reached` (the refusal latches).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../runtime/trace/read.ts';
import { RuntimeMetrics, instrumentSession } from '../../runtime/telemetry/index.ts';
import { ECHO_TOOL, driverDef, openKit, type Kit } from '../loop/kit.ts';
import { hookCapsuleYaml } from '../hooks/hook-capsule.ts';
import type { Script } from '../provider/scripted-provider.ts';
import { startEverything, type RunningServer } from './servers.ts';

let everything: RunningServer;
let kit: Kit | undefined;

beforeAll(async () => {
  everything = await startEverything();
});
afterAll(async () => {
  await everything?.stop();
});
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

/** `inference` lines (appended under `inference:`), then the MCP server with sampling through the driver. */
function yaml(inference: string): string {
  const port = new URL(everything.url).port;
  return `${inference}capabilities:\n  network:\n    allow: ['http://127.0.0.1:${port}']\nmcp:\n  servers:\n    - {name: everything, url: '${everything.url}', tools: [trigger-sampling-request], sampling: driver}\n`;
}

async function open(script: Script, inference: string): Promise<Kit> {
  kit = await openKit({ yaml: hookCapsuleYaml([], yaml(inference), 'mcp-capsule'), artifacts: [driverDef('anthropic'), ECHO_TOOL], script });
  return kit;
}

const trace = (k: Kit) => readTrace(k.session.staged.workdir.trace).events;
const TASK = { taskId: 't1', contextId: 'ctx-1', text: 'ask the server to sample', source: 'task_md' as const };
// A long prompt: the model's tool call (its output) and the server's sampling message (the sampling
// call's input) both carry it, so the refusal below has a wide margin on either side of the ceiling.
const PROMPT = Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ');
const SAMPLE = { toolCalls: [{ name: 'mcp__everything__trigger-sampling-request', input: { prompt: PROMPT } }] };

describe('an MCP sampling request and the spend ceiling', () => {
  it("a sampling call's tokens count in the session's spend: meter, trace and capsule_spend_session_tokens", async () => {
    const k = await open({ turns: [SAMPLE, { text: 'sampled answer' }, { text: 'done' }] }, '  max_session_tokens: 1000000\n');
    const metrics = new RuntimeMetrics();
    const tel = instrumentSession(k.session, { telemetry: false, metrics });
    try {
      expect((await k.session.runTask(TASK)).exit).toBe('completed');
      const inferences = trace(k).filter((e) => e.event_type === 'inference');
      const sampling = inferences.filter((e) => e.origin === 'mcp:everything');
      expect(sampling).toHaveLength(1);
      const cost = (e: Record<string, unknown>) => Number(e.input_tokens) + Number(e.output_tokens);
      expect(cost(sampling[0]!)).toBeGreaterThan(400);
      // Three driver calls (two loop turns and the sampling call); the meter holds all three.
      expect(inferences).toHaveLength(3);
      const total = inferences.reduce((n, e) => n + cost(e), 0);
      expect(k.session.spend.spent).toBe(total);
      expect(await metrics.registry.metrics()).toContain(`capsule_spend_session_tokens{capsule="mcp-capsule"} ${total}`);
    } finally {
      await tel.shutdown();
    }
  });

  it('a sampling call the spend ceiling cannot admit is refused with an MCP error, never sent to the provider', async () => {
    // 500 max output tokens: the first turn reserves ~750 of the 1500 and spends ~1100 (its tool call
    // carries the long prompt); the sampling call would reserve ~1400 more, past the ceiling.
    const k = await open({ turns: [SAMPLE, { text: 'sampled answer' }, { text: 'done' }] }, '  max_tokens: 500\n  max_session_tokens: 1500\n');
    const metrics = new RuntimeMetrics();
    const tel = instrumentSession(k.session, { telemetry: false, metrics });
    try {
      const r = await k.session.runTask(TASK);
      // The refusal latches: the loop's next turn is refused too, and the task ends as the spend rules say.
      expect(r.exit).toBe('spend_ceiling_reached');
      // Only the first turn reached the provider: neither the sampling call nor a later turn.
      expect(k.provider.requests).toHaveLength(1);
      const events = trace(k);
      expect(events.filter((e) => e.event_type === 'inference').map((e) => e.origin ?? 'agent')).toEqual(['agent']);
      const refusals = events.filter((e) => e.event_type === 'spend_ceiling_reached');
      expect(refusals).toEqual([expect.objectContaining({ origin: 'mcp:everything', limit: 1500 }), expect.objectContaining({ turn: 2, limit: 1500 })]);
      // The server got an error answer to its sampling request, so its tool call failed.
      expect(events.filter((e) => e.event_type === 'mcp_call')).toEqual([expect.objectContaining({ tool: 'trigger-sampling-request', status: 'error' })]);
      // Nothing was spent on the refused call: the meter holds the first turn only.
      const first = events.find((e) => e.event_type === 'inference')!;
      expect(k.session.spend.spent).toBe(Number(first.input_tokens) + Number(first.output_tokens));
      const text = await metrics.registry.metrics();
      expect(text).toContain('capsule_spend_ceiling_refusals_total{capsule="mcp-capsule",origin="mcp"} 1');
      expect(text).toContain('capsule_spend_ceiling_refusals_total{capsule="mcp-capsule",origin="agent"} 1');
    } finally {
      await tel.shutdown();
    }
  });
});
