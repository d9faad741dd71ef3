/**
 * /metrics after a scripted session with known usage: served over real HTTP from renderMetrics(),
 * scraped, parsed, and checked for exact values.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { instrumentSession, renderMetrics, resetMetrics, type SessionTelemetry } from '../../runtime/telemetry/index.ts';
import { ECHO_TOOL, capsuleYaml, driverDef, openKit, closeOpened, type Kit } from '../loop/kit.ts';
import { parseExposition, type Exposition } from './prom-text.ts';

let server: http.Server;
let metricsUrl = '';
beforeAll(async () => {
  // What `mur serve` does on --metrics-port.
  server = http.createServer(async (req, res) => {
    if (req.url !== '/metrics') {
      res.statusCode = 404;
      res.end();
      return;
    }
    const { contentType, body } = await renderMetrics();
    res.setHeader('content-type', contentType);
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  metricsUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

let kit: Kit | undefined;
let tel: SessionTelemetry | undefined;
beforeEach(() => resetMetrics());
afterEach(closeOpened(() => ({ kit, tel })));

async function scrape(): Promise<{ contentType: string; text: string; x: Exposition }> {
  const r = await fetch(metricsUrl);
  expect(r.status).toBe(200);
  const text = await r.text();
  return { contentType: r.headers.get('content-type') ?? '', text, x: parseExposition(text) };
}

describe('/metrics after a scripted session', () => {
  for (const api of ['anthropic', 'openai'] as const) {
    it(`${api}: exact token, tool, shell and task counts`, async () => {
      const model = api === 'anthropic' ? 'claude-test' : 'gpt-test';
      kit = await openKit({
        api,
        yaml: capsuleYaml({ api, name: 'metered', shell: ['printf'] }),
        artifacts: [driverDef(api), ECHO_TOOL],
        script: {
          turns: [
            {
              toolCalls: [
                { name: 'echo', input: { text: 'a' } },
                { name: 'no-such-tool-4f2a', input: {} },
              ],
              usage: { input: 100, output: 10 },
            },
            {
              toolCalls: [{ name: 'printf', input: { command: 'x' } }],
              usage: { input: 150, output: 5, cacheRead: 90, ...(api === 'anthropic' ? { cacheWrite: 20 } : {}) },
            },
            { text: 'done', usage: { input: 30, output: 7, cacheRead: 25 } },
          ],
        },
      });
      tel = instrumentSession(kit.session, { telemetry: false });
      expect(instrumentSession(kit.session)).toBe(tel); // a second call changes nothing
      const r = await kit.session.runTask({ taskId: 'task-7d1c', contextId: 'ctx-metrics-91b', text: 'go', source: 'task_md' });
      expect(r.exit).toBe('completed');
      const { contentType, text, x } = await scrape();
      expect(contentType).toBe('text/plain; version=0.0.4; charset=utf-8');

      const c = { capsule: 'metered', model };
      const input = api === 'anthropic' ? 100 + (150 + 90 + 20) + (30 + 25) : 100 + 150 + 30;
      expect(x.get('capsule_tokens_total', { ...c, token_type: 'input', source: 'provider' })).toBe(input);
      expect(x.get('capsule_tokens_total', { ...c, token_type: 'output', source: 'provider' })).toBe(22);
      expect(x.get('capsule_tokens_total', { ...c, token_type: 'cache_read', source: 'provider' })).toBe(115);
      expect(x.get('capsule_tokens_total', { ...c, token_type: 'cache_write', source: 'provider' })).toBe(api === 'anthropic' ? 20 : undefined);
      expect(x.all('capsule_tokens_total').filter((s) => s.labels.source === 'host')).toEqual([]);

      const op = { capsule: 'metered', gen_ai_operation_name: 'chat', gen_ai_provider_name: api, gen_ai_request_model: model };
      expect(x.get('gen_ai_client_token_usage_count', { ...op, gen_ai_token_type: 'input' })).toBe(3);
      expect(x.get('gen_ai_client_token_usage_sum', { ...op, gen_ai_token_type: 'input' })).toBe(input);
      expect(x.get('gen_ai_client_token_usage_sum', { ...op, gen_ai_token_type: 'output' })).toBe(22);
      // Token buckets: one turn (the third) at or below 64 tokens, none at or below 16.
      expect(x.get('gen_ai_client_token_usage_bucket', { ...op, gen_ai_token_type: 'input', le: '16' })).toBe(0);
      expect(x.get('gen_ai_client_token_usage_bucket', { ...op, gen_ai_token_type: 'input', le: '64' })).toBe(1);
      expect(x.get('gen_ai_client_token_usage_bucket', { ...op, gen_ai_token_type: 'input', le: '+Inf' })).toBe(3);
      expect(x.get('gen_ai_client_operation_duration_seconds_count', op)).toBe(3);
      expect(x.get('gen_ai_client_operation_duration_seconds_sum', op)).toBeGreaterThanOrEqual(0); // recorded, not timed

      expect(x.get('capsule_tool_calls_total', { capsule: 'metered', tool: 'echo', status: 'ok' })).toBe(1);
      expect(x.get('capsule_tool_calls_total', { capsule: 'metered', tool: 'unknown', status: 'error' })).toBe(1);
      expect(x.get('capsule_shell_calls_total', { capsule: 'metered', binary: 'printf', outcome: 'ok' })).toBe(1);
      expect(x.get('capsule_tasks_total', { capsule: 'metered', state: 'ok' })).toBe(1);
      expect(x.get('capsule_task_duration_seconds_count', { capsule: 'metered', state: 'ok' })).toBe(1);
      expect(x.get('capsule_active_tasks', { capsule: 'metered' })).toBe(0);
      expect(x.get('capsule_info', { capsule: 'metered', version: '1.0.0', model, provider: api })).toBe(1);

      // Naming: counters end in _total, durations in _seconds; process metrics are there too.
      for (const [name, type] of x.types) {
        if (type === 'counter') expect(name).toMatch(/_total$/);
        if (name.includes('duration')) expect(name).toMatch(/_seconds$/);
      }
      expect(x.types.get('process_cpu_user_seconds_total')).toBe('counter');
      // Bounded labels only: no ids, no model-invented tool names.
      expect(text).not.toContain('task-7d1c');
      expect(text).not.toContain('ctx-metrics-91b');
      expect(text).not.toContain('no-such-tool-4f2a');
      expect(text).not.toContain(kit.session.sessionId);
    });
  }

  it('a task in flight shows in capsule_active_tasks', async () => {
    // The provider holds the answer: the task is in flight from its request's arrival until release.
    let arrived!: () => void;
    let release!: () => void;
    const inFlight = new Promise<void>((r) => (arrived = r));
    const released = new Promise<void>((r) => (release = r));
    const hold = () => (arrived(), released);
    kit = await openKit({
      yaml: capsuleYaml({ name: 'busy' }),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: { turns: [{ text: 'slow answer', hold }] },
    });
    tel = instrumentSession(kit.session, { telemetry: false });
    const running = kit.session.runTask({ taskId: 't', contextId: 'c', text: 'x', source: 'task_md' });
    await inFlight;
    expect((await scrape()).x.get('capsule_active_tasks', { capsule: 'busy' })).toBe(1);
    release();
    await running;
    const { x } = await scrape();
    expect(x.get('capsule_active_tasks', { capsule: 'busy' })).toBe(0);
    expect(x.get('capsule_tasks_total', { capsule: 'busy', state: 'ok' })).toBe(1);
  });

  it('a failed driver call: no tokens counted, its duration recorded with error_type; the task counted failed', async () => {
    kit = await openKit({
      yaml: capsuleYaml({ name: 'flaky' }),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: { turns: [{ error: { status: 529, type: 'overloaded_error', message: 'overloaded' } }], onExhausted: 'repeat-last' },
    });
    tel = instrumentSession(kit.session, { telemetry: false });
    await kit.session.runTask({ taskId: 't', contextId: 'c', text: 'x', source: 'task_md' });
    const { x } = await scrape();
    expect(x.all('capsule_tokens_total')).toEqual([]);
    expect(
      x.get('gen_ai_client_operation_duration_seconds_count', {
        capsule: 'flaky',
        gen_ai_operation_name: 'chat',
        gen_ai_provider_name: 'anthropic',
        gen_ai_request_model: 'claude-test',
        error_type: 'driver_error',
      }),
    ).toBe(1);
    expect(x.get('capsule_tasks_total', { capsule: 'flaky', state: 'failed' })).toBe(1);
  });
});
