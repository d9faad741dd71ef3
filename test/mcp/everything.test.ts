/**
 * MCP tools in a real session against the reference server `@modelcontextprotocol/server-everything`
 * (npm), over Streamable HTTP on loopback: the real Anthropic driver component, the scripted
 * provider, real hook components. The model's tool call reaches the server through the guarded
 * call (hooks before and after), and comes back traced.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../runtime/trace/read.ts';
import type { TaskSink } from '../../runtime/loop/capsule-session.ts';
import { ECHO_TOOL, driverDef, openKit, type Kit } from '../loop/kit.ts';
import { hookArtifact, hookCapsuleYaml, type HookDef } from '../hooks/hook-capsule.ts';
import type { Script } from '../provider/scripted-provider.ts';
import { startEverything, type RunningServer } from './servers.ts';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { InMemorySpanExporter, RuntimeMetrics, instrumentSession } from '../../runtime/telemetry/index.ts';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
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

function mcpYaml(url: string, tools = "['echo', 'get-sum', 'trigger-long-running-operation', 'trigger-elicitation-request']", extra = ''): string {
  const port = new URL(url).port;
  return `capabilities:\n  network:\n    allow: ['http://127.0.0.1:${port}']\nmcp:\n  servers:\n    - {name: everything, url: '${url}', tools: ${tools}}\n${extra}`;
}

async function open(script: Script, hooks: HookDef[] = [], url = everything.url, yaml = mcpYaml(url)): Promise<Kit> {
  kit = await openKit({
    yaml: hookCapsuleYaml(hooks, yaml, 'mcp-capsule'),
    artifacts: [driverDef('anthropic'), ECHO_TOOL, ...hooks.map(hookArtifact)],
    script,
  });
  return kit;
}

const events = (k: Kit, type: string) => readTrace(k.session.staged.workdir.trace).events.filter((e) => e.event_type === type);
const toolResults = (k: Kit) =>
  k.provider.requests.flatMap((r) =>
    ((r.body as { messages?: Array<{ content: unknown }> }).messages ?? []).flatMap((m) =>
      (Array.isArray(m.content) ? m.content : []).filter((c: { type?: string }) => c.type === 'tool_result'),
    ),
  );
const TASK = { taskId: 't1', contextId: 'ctx-1', text: 'use the MCP tool', source: 'task_md' as const };
const recs = (k: Kit, name: string) => {
  const f = join(k.session.staged.workdir.dir, 'logs', `hook-${name}.log`);
  return (existsSync(f) ? readFileSync(f, 'utf8') : '')
    .split('\n')
    .filter((l) => l.startsWith('{"rec"'))
    .map((l) => JSON.parse(l) as { rec: string; ev: Record<string, unknown> });
};

describe('MCP tools from server-everything', () => {
  it('are in the inventory beside the WASM tools, prefixed, attributed, with their input schemas', async () => {
    const k = await open({ turns: [{ text: 'nothing to do' }] });
    const inv = k.session.toolInventory() as Array<{ name: string; description: string; parameters: { properties?: Record<string, unknown> } }>;
    expect(inv.map((t) => t.name)).toEqual([
      'echo',
      'mcp__everything__echo',
      'mcp__everything__get-sum',
      'mcp__everything__trigger-elicitation-request',
      'mcp__everything__trigger-long-running-operation',
    ]);
    const echo = inv.find((t) => t.name === 'mcp__everything__echo')!;
    expect(echo.description).toBe("[MCP server 'everything'] Echoes back the input string");
    expect(Object.keys(echo.parameters.properties ?? {})).toEqual(['message']);
    // The provider was offered them too.
    await k.session.runTask(TASK);
    const offered = (k.provider.requests[0]!.body as { tools: Array<{ name: string }> }).tools.map((t) => t.name);
    expect(offered).toContain('mcp__everything__get-sum');
    expect(events(k, 'mcp_server')).toEqual([
      expect.objectContaining({ server: 'everything', status: 'connected', tools: expect.arrayContaining(['mcp__everything__echo']) }),
    ]);
  });

  it('a model tool call runs on the server through on-tool-call before and after, and is traced', async () => {
    // A policy hook that allows (it decides before the call) and records what it sees, and after.
    const watch: HookDef = {
      name: 'watch',
      contract: 'binding: on-tool-call\ncommit_policy: deny\n',
      script: { 'on-tool-call:decision': { record: true }, 'on-tool-call:observe': { record: true } },
    };
    const k = await open({ turns: [{ toolCalls: [{ name: 'mcp__everything__get-sum', input: { a: 40, b: 2 } }] }, { text: 'the sum is 42' }] }, [watch]);
    const r = await k.session.runTask(TASK);
    expect(r.exit).toBe('completed');
    const results = toolResults(k) as Array<{ content: unknown; is_error?: boolean }>;
    expect(JSON.stringify(results[0]!.content)).toContain('The sum of 40 and 2 is 42.');
    expect(results[0]!.is_error).toBeFalsy();
    expect(events(k, 'tool_call')).toEqual([expect.objectContaining({ tool_name: 'mcp__everything__get-sum', status: 'ok' })]);
    expect(events(k, 'mcp_call')).toEqual([
      expect.objectContaining({ server: 'everything', tool: 'get-sum', model_tool: 'mcp__everything__get-sum', status: 'ok' }),
    ]);
    const seen = recs(k, 'watch');
    expect(seen.map((x) => x.rec)).toEqual(['on-tool-call:decision', 'on-tool-call:observe']);
    expect(seen[0]!.ev.toolName).toBe('mcp__everything__get-sum');
    expect(JSON.parse(seen[0]!.ev.input as string)).toEqual({ a: 40, b: 2 });
  });

  it('an MCP call is an execute_tool span with GenAI attributes, and counted per server and tool', async () => {
    const k = await open({ turns: [{ toolCalls: [{ name: 'mcp__everything__echo', input: { message: 'm' } }] }, { text: 'done' }] });
    const exporter = new InMemorySpanExporter();
    const metrics = new RuntimeMetrics();
    const tel = instrumentSession(k.session, { setup: { exporter, simple: true, env: {} }, metrics });
    try {
      expect((await k.session.runTask(TASK)).exit).toBe('completed');
      const span = exporter.getFinishedSpans().find((s) => s.name === 'execute_tool mcp__everything__echo');
      expect(span?.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'mcp__everything__echo' });
      const text = await metrics.registry.metrics();
      expect(text).toContain('capsule_mcp_calls_total{capsule="mcp-capsule",server="everything",tool="echo",status="ok",code=""} 1');
      expect(text).toContain('capsule_tool_calls_total{capsule="mcp-capsule",tool="mcp__everything__echo",status="ok"} 1');
    } finally {
      await tel.shutdown();
    }
  });

  it('a deny hook stops the MCP call: nothing reaches the server, the model reads the refusal', async () => {
    const guard: HookDef = {
      name: 'guard',
      contract: 'binding: on-tool-call\ncommit_policy: deny\n',
      script: { 'on-tool-call:decision': { ret: { tag: 'deny', val: 'no MCP today' } } },
    };
    const k = await open({ turns: [{ toolCalls: [{ name: 'mcp__everything__echo', input: { message: 'x' } }] }, { text: 'ok' }] }, [guard]);
    const r = await k.session.runTask(TASK);
    expect(r.exit).toBe('completed');
    expect(events(k, 'call_denied')).toEqual([expect.objectContaining({ hook: 'guard', tool_name: 'mcp__everything__echo' })]);
    expect(events(k, 'mcp_call')).toEqual([]);
    expect(JSON.stringify(toolResults(k))).toContain("Refused by policy hook 'guard': no MCP today");
  });

  it('progress notifications of a long-running tool reach the task stream as status messages', async () => {
    const k = await open({
      turns: [{ toolCalls: [{ name: 'mcp__everything__trigger-long-running-operation', input: { duration: 0.2, steps: 2 } }] }, { text: 'done' }],
    });
    const statuses: string[] = [];
    const sink: TaskSink = { textChunk: () => {}, thinkingChunk: () => {}, status: (m) => statuses.push(m), artifact: () => {} };
    const r = await k.session.runTask(TASK, sink);
    expect(r.exit).toBe('completed');
    expect(statuses).toEqual(
      expect.arrayContaining(['MCP everything/trigger-long-running-operation: 1/2', 'MCP everything/trigger-long-running-operation: 2/2']),
    );
    expect(JSON.stringify(toolResults(k))).toContain('Long running operation completed');
  });

  it("an elicitation becomes the task's input request; the caller's answer goes back to the server", async () => {
    const k = await open({ turns: [{ toolCalls: [{ name: 'mcp__everything__trigger-elicitation-request', input: {} }] }, { text: 'thanks' }] });
    const asked: string[] = [];
    const sink: TaskSink = {
      textChunk: () => {},
      thinkingChunk: () => {},
      status: () => {},
      artifact: () => {},
      requestInput: async (prompt) => {
        asked.push(prompt);
        return JSON.stringify({ name: 'Ada Lovelace', check: true });
      },
    };
    const r = await k.session.runTask(TASK, sink);
    expect(r.exit).toBe('completed');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatch(/^MCP server 'everything' asks: Please provide inputs/);
    const text = JSON.stringify(toolResults(k));
    expect(text).toContain('User provided the requested information');
    expect(text).toContain('Ada Lovelace');
  });

  it("sampling: driver runs the server's sampling request through the capsule's driver, metered", async () => {
    const url = everything.url;
    const port = new URL(url).port;
    const yaml = `capabilities:\n  network:\n    allow: ['http://127.0.0.1:${port}']\nmcp:\n  servers:\n    - {name: everything, url: '${url}', tools: [trigger-sampling-request], sampling: driver}\n`;
    const k = await open(
      {
        turns: [
          { toolCalls: [{ name: 'mcp__everything__trigger-sampling-request', input: { prompt: 'say hi' } }] },
          { text: 'hi from the driver', usage: { input: 30, output: 5 } },
          { text: 'done' },
        ],
      },
      [],
      url,
      yaml,
    );
    const r = await k.session.runTask(TASK);
    expect(r.exit).toBe('completed');
    // The second provider request is the sampling call: the server's system prompt and message.
    const sampling = k.provider.requests[1]!.body as { system?: unknown; messages: Array<{ content: unknown }>; tools?: unknown[] };
    expect(JSON.stringify(sampling.system)).toContain('You are a helpful test server.');
    expect(JSON.stringify(sampling.messages)).toContain('context: say hi');
    expect(sampling.tools ?? []).toEqual([]);
    expect(JSON.stringify(toolResults(k))).toContain('hi from the driver');
    expect(events(k, 'inference').filter((e) => e.origin === 'mcp:everything')).toEqual([expect.objectContaining({ decision: 'end_turn' })]);
  });

  it('sampling: refuse (the default) does not declare the capability: the server offers no sampling tool', async () => {
    const k = await open({ turns: [{ text: 'ok' }] }, [], everything.url, mcpYaml(everything.url, "['*']"));
    const names = k.session.toolInventory().map((t) => t.name);
    expect(names).toContain('mcp__everything__echo');
    expect(names).not.toContain('mcp__everything__trigger-sampling-request');
  });

  it('a local server over stdio (command, its binary in shell.allow) serves its tools the same way', async () => {
    const main = require.resolve('@modelcontextprotocol/server-everything/package.json').replace(/package\.json$/, 'dist/index.js');
    const yaml = `capabilities:\n  shell:\n    allow: [node]\nmcp:\n  servers:\n    - {name: local, command: [node, '${main}', stdio], tools: [get-sum]}\n`;
    const k = await open({ turns: [{ toolCalls: [{ name: 'mcp__local__get-sum', input: { a: 2, b: 3 } }] }, { text: 'five' }] }, [], everything.url, yaml);
    expect(k.session.toolInventory().map((t) => t.name)).toEqual(['echo', 'mcp__local__get-sum', 'node']);
    expect((await k.session.runTask(TASK)).exit).toBe('completed');
    expect(JSON.stringify(toolResults(k))).toContain('The sum of 2 and 3 is 5.');
    expect(events(k, 'mcp_server')).toEqual([expect.objectContaining({ server: 'local', status: 'connected', command: ['node', main, 'stdio'] })]);
  });

  it('a server that goes away fails that call with a clear error; the task goes on', async () => {
    const own = await startEverything();
    try {
      const k = await open(
        { turns: [{ toolCalls: [{ name: 'mcp__everything__echo', input: { message: 'x' } }] }, { text: 'the server was down, carrying on' }] },
        [],
        own.url,
      );
      await own.stop();
      const r = await k.session.runTask(TASK);
      expect(r.exit).toBe('completed');
      expect(r.text).toBe('the server was down, carrying on');
      const result = JSON.stringify(toolResults(k));
      expect(result).toMatch(/error: MCP tool mcp__everything__echo failed \[E-MCP-0(09|13)\]/);
      expect(events(k, 'mcp_call')).toEqual([
        expect.objectContaining({ server: 'everything', tool: 'echo', status: 'error', code: expect.stringMatching(/^E-MCP-0(09|13)$/) }),
      ]);
      expect(events(k, 'tool_call')).toEqual([expect.objectContaining({ tool_name: 'mcp__everything__echo', status: 'error' })]);
    } finally {
      await own.stop();
    }
  });
});
