/**
 * The series the chart's dashboard and alerts need beyond the counters: tool and hook call latency
 * histograms, and the session's spend against its ceiling as gauges. Real sessions with real
 * components (the echo tool, the hook-script fixture), /metrics rendered and parsed.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { instrumentSession, renderMetrics, resetMetrics, type SessionTelemetry } from '../../runtime/telemetry/index.ts';
import { ECHO_TOOL, capsuleYaml, driverDef, openKit, closeOpened, type Kit } from '../loop/kit.ts';
import { openHookCapsule } from '../hooks/hook-capsule.ts';
import { parseExposition, type Exposition } from './prom-text.ts';

let kit: Kit | undefined;
let tel: SessionTelemetry | undefined;
beforeEach(() => resetMetrics());
afterEach(closeOpened(() => ({ kit, tel })));

async function scrape(): Promise<Exposition> {
  return parseExposition((await renderMetrics()).body);
}

const TASK = { taskId: 't1', contextId: 'c1', text: 'go', source: 'task_md' as const };

describe('latency and spend series on /metrics after a task', () => {
  it('capsule_tool_call_duration_seconds counts each tool call by tool and status', async () => {
    kit = await openKit({
      yaml: capsuleYaml({ name: 'timed' }),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: {
        turns: [
          {
            toolCalls: [
              { name: 'echo', input: { text: 'a' } },
              { name: 'no-such-tool-9c1e', input: {} },
            ],
          },
          { text: 'done' },
        ],
      },
    });
    tel = instrumentSession(kit.session, { telemetry: false });
    expect((await kit.session.runTask(TASK)).exit).toBe('completed');
    const x = await scrape();
    expect(x.get('capsule_tool_call_duration_seconds_count', { capsule: 'timed', tool: 'echo', status: 'ok' })).toBe(1);
    expect(x.get('capsule_tool_call_duration_seconds_bucket', { capsule: 'timed', tool: 'echo', status: 'ok', le: '+Inf' })).toBe(1);
    expect(x.get('capsule_tool_call_duration_seconds_count', { capsule: 'timed', tool: 'unknown', status: 'error' })).toBe(1);
    expect(x.types.get('capsule_tool_call_duration_seconds')).toBe('histogram');
  });

  it('capsule_hook_call_duration_seconds counts each call into a hook by hook and handler', async () => {
    kit = await openHookCapsule(
      [{ name: 'watch', contract: 'binding: on-inference\n', script: {} }],
      { turns: [{ toolCalls: [{ name: 'echo', input: { text: 'hi' } }] }, { text: 'done' }] },
      '',
      'hooked',
    );
    tel = instrumentSession(kit.session, { telemetry: false });
    expect((await kit.session.runTask(TASK)).exit).toBe('completed');
    const x = await scrape();
    // Two turns, one on-inference dispatch each.
    expect(x.get('capsule_hook_call_duration_seconds_count', { capsule: 'hooked', hook: 'watch', handler: 'on-inference' })).toBe(2);
    expect(x.types.get('capsule_hook_call_duration_seconds')).toBe('histogram');
  });

  it('capsule_spend_session_tokens and capsule_spend_ceiling_tokens show the session against inference.max_session_tokens', async () => {
    kit = await openKit({
      yaml: capsuleYaml({ name: 'capped', inference: '  max_session_tokens: 100000' }),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: { turns: [{ text: 'done', usage: { input: 120, output: 30 } }] },
    });
    tel = instrumentSession(kit.session, { telemetry: false });
    expect((await kit.session.runTask(TASK)).exit).toBe('completed');
    const x = await scrape();
    expect(x.get('capsule_spend_ceiling_tokens', { capsule: 'capped' })).toBe(100000);
    expect(x.get('capsule_spend_session_tokens', { capsule: 'capped' })).toBe(kit.session.spend.spent);
    expect(kit.session.spend.spent).toBeGreaterThan(0);
  });

  it('a capsule without a ceiling has its spend but no capsule_spend_ceiling_tokens series', async () => {
    kit = await openKit({
      yaml: capsuleYaml({ name: 'uncapped' }),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: { turns: [{ text: 'done', usage: { input: 10, output: 2 } }] },
    });
    tel = instrumentSession(kit.session, { telemetry: false });
    expect((await kit.session.runTask(TASK)).exit).toBe('completed');
    const x = await scrape();
    expect(x.all('capsule_spend_ceiling_tokens')).toEqual([]);
    expect(x.get('capsule_spend_session_tokens', { capsule: 'uncapped' })).toBe(kit.session.spend.spent);
  });
});
