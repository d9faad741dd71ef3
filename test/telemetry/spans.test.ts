/**
 * The span tree of a scripted session, exported over real OTLP/HTTP to an in-process receiver:
 * real driver component, real scripted provider over HTTP, real WASM tool, real shell binary.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { instrumentSession, type SessionTelemetry } from '../../runtime/telemetry/index.ts';
import { ECHO_TOOL, capsuleYaml, driverDef, openKit, closeOpened, type Kit } from '../loop/kit.ts';
import { childrenOf, outline, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './otlp-receiver.ts';

let kit: Kit | undefined;
let tel: SessionTelemetry | undefined;
let receiver: OtlpReceiver | undefined;
afterEach(closeOpened(() => ({ kit, tel, receiver })));

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);

describe('spans of a scripted session (OTLP/HTTP JSON to an in-process receiver)', () => {
  for (const api of ['anthropic', 'openai'] as const) {
    it(`${api}: invoke_agent → chat / execute_tool / shell, GenAI attributes, resource, headers`, async () => {
      receiver = await startOtlpReceiver();
      const model = api === 'anthropic' ? 'claude-test' : 'gpt-test';
      kit = await openKit({
        api,
        yaml: capsuleYaml({
          api,
          name: 'span-capsule',
          shell: ['printf'],
          extra: `observability:\n  otel_endpoint: ${receiver.url}\n  otel_headers: {x-collector-token: abc123}`,
        }),
        artifacts: [driverDef(api), ECHO_TOOL],
        script: {
          turns: [
            { toolCalls: [{ name: 'echo', input: { text: 'hi' } }], usage: { input: 100, output: 10 } },
            {
              toolCalls: [{ name: 'printf', input: { command: 'hello' } }],
              usage: { input: 150, output: 5, cacheRead: 90, ...(api === 'anthropic' ? { cacheWrite: 20 } : {}) },
            },
            { text: 'all done', usage: { input: 30, output: 7, cacheRead: 25 } },
          ],
        },
      });
      tel = instrumentSession(kit.session, {
        setup: { protocol: 'http/json', env: { POD_NAME: 'span-pod-0', POD_NAMESPACE: 'agents' }, batch: { scheduledDelayMillis: 20 } },
      });
      expect(tel.telemetry.enabled).toBe(true);
      expect(tel.telemetry.url).toBe(`${receiver.url}/v1/traces`);
      const r = await kit.session.runTask({
        taskId: 'task-1',
        contextId: 'ctx-span',
        text: 'echo then printf',
        source: 'a2a',
        traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
      });
      expect(r.exit).toBe('completed');
      await kit.close();
      kit = undefined;
      await tel.shutdown();
      const spans = receiver.spans;

      // One task span, a child of the caller's span, in the caller's trace.
      const [task] = byName(spans, 'invoke_agent span-capsule');
      expect(task).toBeDefined();
      expect(task!.traceId).toBe(CALLER_TRACE);
      expect(task!.parentSpanId).toBe(CALLER_SPAN);
      expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([CALLER_TRACE]));
      expect(outline(spans, task!)).toEqual([
        'invoke_agent span-capsule',
        `  chat ${model}`,
        '  execute_tool echo',
        `  chat ${model}`,
        '  execute_tool printf',
        '    shell printf',
        `  chat ${model}`,
      ]);
      expect(task!.attributes).toMatchObject({
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': 'span-capsule',
        'gen_ai.agent.version': '1.0.0',
        'gen_ai.provider.name': api,
        'gen_ai.request.model': model,
        'gen_ai.conversation.id': 'ctx-span',
        'capsule.task.id': 'task-1',
        'capsule.task.source': 'a2a',
        'capsule.task.exit_status': 'ok',
        'capsule.task.turns': 3,
      });
      expect(task!.status.code ?? 0).not.toBe(2);

      // chat spans: GenAI usage, input including cached (Anthropic reports them apart).
      const chats = childrenOf(spans, task!).filter((s) => s.name.startsWith('chat'));
      const expectInput = api === 'anthropic' ? [100, 150 + 90 + 20, 30 + 25] : [100, 150, 30];
      expect(chats.map((c) => c.attributes['gen_ai.usage.input_tokens'])).toEqual(expectInput);
      expect(chats.map((c) => c.attributes['gen_ai.usage.output_tokens'])).toEqual([10, 5, 7]);
      expect(chats.map((c) => c.attributes['gen_ai.usage.cache_read.input_tokens'])).toEqual([undefined, 90, 25]);
      expect(chats.map((c) => c.attributes['gen_ai.usage.cache_creation.input_tokens'])).toEqual([undefined, api === 'anthropic' ? 20 : undefined, undefined]);
      for (const [i, c] of chats.entries()) {
        expect(c.kind).toBe(3); // CLIENT
        expect(c.attributes).toMatchObject({
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': api,
          'gen_ai.request.model': model,
          'gen_ai.conversation.id': 'ctx-span',
          'capsule.turn': i + 1,
          'capsule.usage.source': 'provider',
        });
        expect(typeof c.attributes['capsule.estimate.input_tokens']).toBe('number');
      }
      expect(chats.map((c) => c.attributes['gen_ai.response.finish_reasons'])).toEqual([['tool_call'], ['tool_call'], ['end_turn']]);
      expect(task!.attributes['gen_ai.usage.input_tokens']).toBe(expectInput.reduce((a, b) => a + b, 0));
      expect(task!.attributes['gen_ai.usage.output_tokens']).toBe(22);

      // Tool spans.
      const [echo] = byName(spans, 'execute_tool echo');
      expect(echo!.attributes).toMatchObject({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'echo',
        'gen_ai.tool.type': 'function',
        'capsule.tool.kind': 'wasm',
        'capsule.tool.status': 'ok',
        'capsule.tool.state_effect': 'read',
        'capsule.turn': 1,
      });
      expect(typeof echo!.attributes['gen_ai.tool.call.id']).toBe('string');
      const [printf] = byName(spans, 'execute_tool printf');
      expect(printf!.attributes).toMatchObject({ 'gen_ai.tool.name': 'printf', 'capsule.tool.kind': 'shell', 'capsule.tool.status': 'ok' });
      const [shell] = byName(spans, 'shell printf');
      expect(shell!.attributes).toMatchObject({ 'capsule.shell.binary': 'printf', 'process.exit.code': 0, 'capsule.shell.stdout_bytes': 5 });
      // Children lie inside their parents.
      for (const s of spans) {
        const p = spans.find((x) => x.spanId === s.parentSpanId);
        if (!p || s.name.startsWith('shell')) continue; // shell spans are rebuilt from ms timestamps
        // The SDK anchors start times on Date.now() (ms), so allow 2 ms of slack.
        const slack = 2_000_000n;
        expect(s.startNs + slack >= p.startNs && s.endNs <= p.endNs + slack, `${s.name} inside ${p.name}`).toBe(true);
      }

      // Resource and the exporter's request.
      expect(task!.resource).toMatchObject({
        'service.name': 'span-capsule',
        'service.version': '1.0.0',
        'k8s.pod.name': 'span-pod-0',
        'k8s.namespace.name': 'agents',
      });
      expect(task!.scope).toBe('capsule-runtime');
      expect(receiver.requests.length).toBeGreaterThan(0);
      expect(receiver.requests.every((q) => q.path === '/v1/traces' && q.contentType.includes('application/json'))).toBe(true);
      expect(receiver.requests[0]!.headers['x-collector-token']).toBe('abc123');
    });
  }

  it('no incoming traceparent: the task span is a root of a new trace; failed tasks are error spans', async () => {
    receiver = await startOtlpReceiver();
    kit = await openKit({
      yaml: capsuleYaml({ name: 'root-capsule' }),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: { turns: [{ error: { status: 529, type: 'overloaded_error', message: 'overloaded' } }], onExhausted: 'repeat-last' },
    });
    tel = instrumentSession(kit.session, { setup: { endpoint: receiver.url, protocol: 'http/json', env: {} } });
    const r = await kit.session.runTask({ taskId: 't', contextId: 'c', text: 'x', source: 'task_md' });
    expect(r.exit).toBe('failed');
    await tel.shutdown();
    const [task] = byName(receiver.spans, 'invoke_agent root-capsule');
    expect(task!.parentSpanId).toBeUndefined();
    expect(task!.status.code).toBe(2);
    expect(task!.attributes).toMatchObject({ 'capsule.task.exit_status': 'failed', 'error.type': 'failed' });
    const [chat] = childrenOf(receiver.spans, task!);
    expect(chat!.name).toBe('chat claude-test');
    expect(chat!.status.code).toBe(2);
    expect(chat!.attributes['error.type']).toBe('driver_error');
    expect(task!.resource['k8s.pod.name']).toBeUndefined();
  });

  it('http/protobuf (the default protocol) reaches the collector too', async () => {
    receiver = await startOtlpReceiver();
    kit = await openKit({ yaml: capsuleYaml({ name: 'proto-capsule' }), artifacts: [driverDef('anthropic'), ECHO_TOOL], script: { turns: [{ text: 'ok' }] } });
    tel = instrumentSession(kit.session, { setup: { endpoint: receiver.url, env: {} } });
    expect(tel.telemetry.protocol).toBe('http/protobuf');
    await kit.session.runTask({ taskId: 't', contextId: 'c', text: 'x', source: 'task_md' });
    await tel.shutdown();
    expect(receiver.requests.length).toBeGreaterThan(0);
    expect(receiver.requests[0]).toMatchObject({ path: '/v1/traces', contentType: 'application/x-protobuf' });
    expect(receiver.requests[0]!.bytes).toBeGreaterThan(50);
  });
});
