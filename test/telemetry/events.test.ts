/**
 * Spans and metrics from trace events the scripted sessions do not produce (policy denials, hook
 * faults, spend refusals, hook inference, compaction, abandoned tasks), driven through a real
 * TraceWriter, with an in-memory exporter; and the hook-dispatch span API for the hook bus.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TraceWriter } from '../../runtime/trace/writer.ts';
import { NO_HOOKS, type HookPort } from '../../runtime/hooks/port.ts';
import {
  InMemorySpanExporter,
  RuntimeMetrics,
  attachMetrics,
  attachSpans,
  tracedHookPort,
  setupTelemetry,
  startCompactionSpan,
  startChatSpan,
  startHookSpan,
  startToolSpan,
  currentToolTraceparent,
  TELEMETRY_OFF,
  type Telemetry,
  type ReadableSpan,
} from '../../runtime/telemetry/index.ts';
import { parseExposition } from './prom-text.ts';

let exporter: InMemorySpanExporter;
let tel: Telemetry;
let writer: TraceWriter;
let m: RuntimeMetrics;
let detach: (() => void)[] = [];

beforeEach(() => {
  exporter = new InMemorySpanExporter();
  tel = setupTelemetry({ serviceName: 'ev', serviceVersion: '0.0.1', exporter, simple: true, current: false, env: {} });
  writer = new TraceWriter(join(mkdtempSync(join(tmpdir(), 'tel-ev-')), 'trace.jsonl'), 'sess-1');
  m = new RuntimeMetrics();
  detach = [
    attachSpans(writer, { capsule: 'ev', version: '0.0.1', model: 'claude-x', provider: 'anthropic', telemetry: tel }),
    attachMetrics(writer, { capsule: 'ev', version: '0.0.1', model: 'claude-x', provider: 'anthropic' }, m),
  ];
});
afterEach(async () => {
  for (const d of detach) d();
  await tel.shutdown();
});

const spans = () => exporter.getFinishedSpans();
const named = (n: string) => spans().filter((s) => s.name === n);
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const id = (s: ReadableSpan) => s.spanContext().spanId;
const scrape = async () => parseExposition(await m.registry.metrics());

describe('spans from trace events', () => {
  it('call_denied nests under the tool span; hook faults and spend refusals are span events', async () => {
    writer.write('task_start', {
      task_id: 't1',
      context_id: 'c1',
      source: 'a2a',
      traceparent_from_caller: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });
    const tool = startToolSpan(writer, { name: 'sh', callId: 'call_1', turn: 1 });
    expect(tool.traceparent).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);
    expect(currentToolTraceparent(writer)).toBe(tool.traceparent);
    writer.write('call_denied', {
      kind: 'shell',
      turn: 1,
      binary: '/usr/bin/sh',
      argv: ['-c', 'rm -rf /'],
      hook: 'no-rm',
      reason: 'destructive',
      fail_closed: false,
    });
    writer.write('hook_dispatch_error', { hook_name: 'audit', event: 'on-shell', arm: 'timeout', detail: 'took too long' });
    tool.end({ status: 'denied', kind: 'shell', isError: true });
    expect(currentToolTraceparent(writer)).toBeUndefined();
    writer.write('spend_ceiling_reached', { turn: 2, requested: 900, spent: 100, limit: 1000 });
    writer.write('task_end', { task_id: 't1', exit_status: 'spend_ceiling_reached', reason: 'ceiling', turns: 2 });

    const [task] = named('invoke_agent ev');
    const [t] = named('execute_tool sh');
    const [denied] = named('call_denied sh');
    expect(task!.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(task!.parentSpanContext?.isRemote).toBe(true);
    expect(parentOf(t!)).toBe(id(task!));
    expect(parentOf(denied!)).toBe(id(t!));
    expect(denied!.attributes).toMatchObject({
      'capsule.hook.name': 'no-rm',
      'capsule.denied.kind': 'shell',
      'capsule.denied.reason': 'destructive',
      'capsule.denied.fail_closed': false,
    });
    expect(t!.status.code).toBe(2);
    expect(t!.attributes['error.type']).toBe('denied');
    expect(t!.events.map((e) => e.name)).toEqual(['hook_dispatch_error']);
    expect(t!.events[0]!.attributes).toMatchObject({ 'capsule.hook.name': 'audit', 'capsule.hook.arm': 'timeout', 'capsule.hook.handler': 'on-shell' });
    expect(task!.events.map((e) => e.name)).toEqual(['spend_ceiling_reached']);
    expect(task!.attributes['capsule.task.exit_status']).toBe('spend_ceiling_reached');
    expect(task!.status.code).toBe(2);

    const x = await scrape();
    expect(x.get('capsule_calls_denied_total', { capsule: 'ev', hook: 'no-rm', kind: 'shell' })).toBe(1);
    expect(x.get('capsule_shell_calls_total', { capsule: 'ev', binary: 'sh', outcome: 'denied' })).toBe(1);
    expect(x.get('capsule_hook_faults_total', { capsule: 'ev', hook: 'audit', arm: 'timeout' })).toBe(1);
    expect(x.get('capsule_spend_ceiling_refusals_total', { capsule: 'ev', origin: 'agent' })).toBe(1);
    expect(x.get('capsule_tasks_total', { capsule: 'ev', state: 'spend_ceiling_reached' })).toBe(1);
  });

  it('host counts when the driver reported nothing; hook inference gets its own chat span and origin', async () => {
    writer.write('task_start', { task_id: 't1', context_id: 'c1', source: 'task_md' });
    startChatSpan(writer, { model: 'claude-x', turn: 1 });
    writer.write('inference', {
      turn: 1,
      input_tokens: 321,
      output_tokens: 12,
      decision: 'end_turn',
      model: 'claude-x',
      duration_ms: 40,
      stop_reason: 'end_turn',
    });
    const hook = startHookSpan(writer, { hook: 'summarizer', handler: 'on-compaction', mode: 'blocking' });
    writer.write('inference', {
      origin: 'hook:summarizer',
      model: 'claude-small',
      input_tokens: 50,
      output_tokens: 5,
      decision: 'end_turn',
      duration_ms: 25,
      reported_usage: { input_tokens: 48, output_tokens: 6, cached_tokens: 0 },
    });
    writer.write('spend_ceiling_reached', { origin: 'hook:summarizer', requested: 10, limit: 5 });
    hook.end('replace-context');
    writer.write('task_end', { task_id: 't1', exit_status: 'ok', turns: 1 });

    const [task] = named('invoke_agent ev');
    const [agentChat] = named('chat claude-x');
    const [hookChat] = named('chat claude-small');
    const [h] = named('hook summarizer');
    expect(agentChat!.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 321,
      'gen_ai.usage.output_tokens': 12,
      'capsule.usage.source': 'host',
      'gen_ai.conversation.id': 'c1',
    });
    expect(parentOf(agentChat!)).toBe(id(task!));
    expect(parentOf(h!)).toBe(id(task!));
    expect(parentOf(hookChat!)).toBe(id(h!));
    // A reported 0 is a real cache miss: kept, not dropped.
    expect(hookChat!.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 48,
      'gen_ai.usage.cache_read.input_tokens': 0,
      'capsule.inference.origin': 'hook:summarizer',
      'capsule.hook.name': 'summarizer',
    });
    // The driver's report as given, beside the GenAI numbers; nothing the driver did not report.
    expect(hookChat!.attributes).toMatchObject({
      'capsule.reported.input_tokens': 48,
      'capsule.reported.output_tokens': 6,
      'capsule.reported.cached_tokens': 0,
    });
    expect(hookChat!.attributes).not.toHaveProperty('capsule.reported.cache_write_tokens');
    expect(Object.keys(agentChat!.attributes).filter((k) => k.startsWith('capsule.reported.'))).toEqual([]);
    expect(h!.attributes).toMatchObject({
      'capsule.hook.name': 'summarizer',
      'capsule.hook.handler': 'on-compaction',
      'capsule.hook.mode': 'blocking',
      'capsule.hook.outcome': 'replace-context',
    });
    expect(h!.events.map((e) => e.name)).toEqual(['spend_ceiling_reached']);
    // Retroactive hook chat span: 25 ms long.
    const durMs = (hookChat!.duration[0] * 1e9 + hookChat!.duration[1]) / 1e6;
    expect(durMs).toBeGreaterThanOrEqual(24);
    expect(task!.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 321 + 48, 'gen_ai.usage.output_tokens': 12 + 6 });

    const x = await scrape();
    expect(x.get('capsule_tokens_total', { capsule: 'ev', model: 'claude-x', token_type: 'input', source: 'host' })).toBe(321);
    expect(x.get('capsule_tokens_total', { capsule: 'ev', model: 'claude-x', token_type: 'output', source: 'host' })).toBe(12);
    expect(x.get('capsule_tokens_total', { capsule: 'ev', model: 'claude-small', token_type: 'input', source: 'provider' })).toBe(48);
    expect(x.get('capsule_tokens_total', { capsule: 'ev', model: 'claude-small', token_type: 'cache_read', source: 'provider' })).toBe(0);
    expect(x.get('capsule_spend_ceiling_refusals_total', { capsule: 'ev', origin: 'hook' })).toBe(1);
  });

  it('compaction: the span covers the dispatch and takes tokens_after from the compaction event', async () => {
    writer.write('task_start', { task_id: 't1', context_id: 'c1', source: 'task_md' });
    const c = startCompactionSpan(writer, { turn: 3, tokensBefore: 9000, threshold: 0.8 });
    const h = startHookSpan(writer, { hook: 'compactor', handler: 'on-compaction' });
    h.end('replace-context');
    c.end({ kind: 'replaced', hook: 'compactor' });
    writer.write('compaction', { turn: 3, hook: 'compactor', tokens_before: 9000, tokens_after: 1200, messages_after: 4 });
    const c2 = startCompactionSpan(writer, { turn: 4, tokensBefore: 9100, threshold: 0.8 });
    c2.end({ kind: 'fatal', hook: 'compactor', message: 'boom' });
    writer.write('task_end', { task_id: 't1', exit_status: 'failed' });
    const [first, second] = named('compaction');
    expect(first!.attributes).toMatchObject({
      'capsule.compaction.outcome': 'replaced',
      'capsule.compaction.tokens_before': 9000,
      'capsule.compaction.tokens_after': 1200,
      'capsule.compaction.messages_after': 4,
      'capsule.hook.name': 'compactor',
    });
    expect(parentOf(named('hook compactor')[0]!)).toBe(id(first!));
    expect(second!.status.code).toBe(2);
  });

  it('a task that never wrote task_end is closed by the next task_start; session_end closes the rest', async () => {
    writer.write('task_start', { task_id: 't1', context_id: 'c1', source: 'task_md' });
    startChatSpan(writer, { turn: 1 });
    writer.write('task_start', { task_id: 't2', context_id: 'c2', source: 'task_md' });
    writer.write('session_end', { exit_status: 'ok' });
    const tasks = named('invoke_agent ev');
    expect(tasks.map((t) => t.attributes['capsule.task.exit_status'])).toEqual(['abandoned', 'session_ended']);
    expect(named('chat claude-x')[0]!.status.code).toBe(2);
    const x = await scrape();
    expect(x.get('capsule_active_tasks', { capsule: 'ev' })).toBe(0);
  });

  it('unknown tools get a bounded label; denied tool calls count as status denied', async () => {
    writer.write('tool_call', { turn: 1, tool_name: 'made-up-by-the-model', status: 'error', error: 'unknown tool' });
    writer.write('call_denied', { kind: 'tool', turn: 1, tool_name: 'echo', hook: 'guard', reason: 'no', fail_closed: true });
    const x = await scrape();
    expect(x.get('capsule_tool_calls_total', { capsule: 'ev', tool: 'unknown', status: 'error' })).toBe(1);
    expect(x.get('capsule_tool_calls_total', { capsule: 'ev', tool: 'echo', status: 'denied' })).toBe(1);
    expect(x.get('capsule_calls_denied_total', { capsule: 'ev', hook: 'guard', kind: 'tool' })).toBe(1);
  });

  it('a refused outgoing request counts by component and lands on the span of the call that made it', async () => {
    writer.write('task_start', { task_id: 't1', context_id: 'c1', source: 'task_md' });
    const tool = startToolSpan(writer, { name: 'fetcher', callId: 'call_1', turn: 1 });
    writer.write('network_denied', { component_kind: 'tool', component: 'fetcher', destination: 'https://evil.example:8443', task_id: 't1' });
    tool.end({ status: 'ok', kind: 'wasm' });
    writer.write('task_end', { task_id: 't1', exit_status: 'ok' });
    const [t] = named('execute_tool fetcher');
    expect(t!.events.map((e) => e.name)).toEqual(['network_denied']);
    expect(t!.events[0]!.attributes).toEqual({
      'capsule.component.kind': 'tool',
      'capsule.component.name': 'fetcher',
      'url.scheme': 'https',
      'server.address': 'evil.example',
      'server.port': 8443,
    });
    const x = await scrape();
    expect(x.get('capsule_network_denied_total', { capsule: 'ev', component_kind: 'tool', component: 'fetcher' })).toBe(1);
  });
});

describe('hook dispatch spans', () => {
  it('tracedHookPort decorates each handler dispatch with its outcome and leaves the port untouched', async () => {
    const calls: string[] = [];
    const port: HookPort = {
      ...NO_HOOKS,
      toolDecision: async () => {
        calls.push('decision');
        const inner = startHookSpan(writer, { hook: 'guard', handler: 'on-tool-call', phase: 'decision' });
        inner.end('deny');
        return { allowed: false, hook: 'guard', reason: 'no', agentMessage: 'no' };
      },
      taskEnd: async () => ({ reopen: { hook: 'judge', feedback: 'again' } }),
      sessionEnd: async () => {
        throw new Error('hook crashed');
      },
    };
    const original = { ...port };
    const traced = tracedHookPort(port, writer);
    expect(port).toEqual(original); // a decorator: no method of the port is replaced
    writer.write('task_start', { task_id: 't1', context_id: 'c1', source: 'task_md' });
    const tool = startToolSpan(writer, { name: 'echo' });
    expect(await traced.toolDecision({ turn: 1, toolName: 'echo' })).toMatchObject({ allowed: false });
    tool.end({ status: 'denied' });
    await traced.taskEnd({ taskId: 't1', exitStatus: 'ok' });
    await expect(traced.sessionEnd({})).rejects.toThrow('hook crashed');
    expect(calls).toEqual(['decision']);
    const [decision, taskEnd, sessionEnd] = [
      named('hook_dispatch on-tool-call')[0]!,
      named('hook_dispatch on-task-end')[0]!,
      named('hook_dispatch on-session-end')[0]!,
    ];
    expect(decision.attributes).toMatchObject({ 'capsule.hook.handler': 'on-tool-call', 'capsule.hook.phase': 'decision', 'capsule.hook.outcome': 'deny' });
    expect(parentOf(decision)).toBe(id(named('execute_tool echo')[0]!));
    expect(parentOf(named('hook guard')[0]!)).toBe(id(decision));
    expect(taskEnd.attributes['capsule.hook.outcome']).toBe('reopen-task');
    expect(sessionEnd.status).toMatchObject({ code: 2, message: 'hook crashed' });
  });

  it('tracing off: an incoming traceparent still passes through to peers; none is made up', () => {
    const w = new TraceWriter(join(mkdtempSync(join(tmpdir(), 'tel-ev-')), 'trace.jsonl'), 'sess-3');
    const off = attachSpans(w, { capsule: 'off', version: '1', provider: 'openai', telemetry: TELEMETRY_OFF });
    w.write('task_start', { task_id: 't1', context_id: 'c1', traceparent_from_caller: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
    const t = startToolSpan(w, { name: 'delegate-task' });
    expect(t.traceparent).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    t.end({ status: 'ok' });
    w.write('task_end', { task_id: 't1', exit_status: 'ok' });
    w.write('task_start', { task_id: 't2', context_id: 'c2' });
    expect(startToolSpan(w, { name: 'delegate-task' }).traceparent).toBeUndefined();
    off();
  });

  it('without attachSpans every span call is a no-op', () => {
    const other = new TraceWriter(join(mkdtempSync(join(tmpdir(), 'tel-ev-')), 'trace.jsonl'), 'sess-2');
    const t = startToolSpan(other, { name: 'x' });
    expect(t.traceparent).toBeUndefined();
    t.end({ status: 'ok' });
    startHookSpan(other, { hook: 'h', handler: 'on-inference' }).end('none');
    startChatSpan(other, { turn: 1 });
    other.write('task_start', { task_id: 't' });
    expect(spans()).toEqual([]);
  });
});

describe('bounded metric labels', () => {
  it('tool and binary names the capsule does not declare count as unknown; refused and unstartable shell calls are denied and error', async () => {
    const own = new RuntimeMetrics();
    const w = new TraceWriter(join(mkdtempSync(join(tmpdir(), 'tel-lab-')), 'trace.jsonl'), 'sess-2');
    const off = attachMetrics(w, { capsule: 'sc', provider: 'none', knownTool: (n) => n === 'echo-tool', knownBinary: (b) => b === 'printf' }, own);
    try {
      w.write('tool_call', { tool_name: 'echo-tool', status: 'ok' });
      for (let i = 0; i < 5; i++) w.write('tool_call', { tool_name: `made-up-${i}`, status: 'error' });
      w.write('shell', { binary: '/usr/bin/printf', exit_code: 0 });
      w.write('shell', { binary: '/usr/bin/printf', exit_code: 3 });
      w.write('shell', { binary: 'curl', refused: true, error: 'not allowlisted' });
      w.write('shell', { binary: '/usr/bin/printf', error: 'spawn EACCES' });
      w.write('shell', { binary: '/opt/guest-chosen-name', exit_code: 0 });
      const x = parseExposition(await own.registry.metrics());
      expect(x.get('capsule_tool_calls_total', { capsule: 'sc', tool: 'echo-tool', status: 'ok' })).toBe(1);
      expect(x.get('capsule_tool_calls_total', { capsule: 'sc', tool: 'unknown', status: 'error' })).toBe(5);
      expect(x.get('capsule_shell_calls_total', { capsule: 'sc', binary: 'printf', outcome: 'ok' })).toBe(1);
      expect(x.get('capsule_shell_calls_total', { capsule: 'sc', binary: 'printf', outcome: 'nonzero_exit' })).toBe(1);
      expect(x.get('capsule_shell_calls_total', { capsule: 'sc', binary: 'unknown', outcome: 'denied' })).toBe(1);
      expect(x.get('capsule_shell_calls_total', { capsule: 'sc', binary: 'printf', outcome: 'error' })).toBe(1);
      expect(x.get('capsule_shell_calls_total', { capsule: 'sc', binary: 'unknown', outcome: 'ok' })).toBe(1);
      expect((await own.registry.metrics()).match(/made-up|guest-chosen/)).toBeNull();
    } finally {
      off();
    }
  });
});
