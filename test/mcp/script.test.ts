/**
 * A script capsule's component calls MCP tools through `murmur:tool-registry/invoke`, by the names
 * the model would see, like any declared tool: a real capsule component (test/fixtures/components/
 * script-capsule), a staged capsule, the reference server-everything over Streamable HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoYaml, program, results, task, traceOf, useScriptSessions } from '../script/helpers.ts';
import { startEverything, type RunningServer } from './servers.ts';

const sessions = useScriptSessions();
let everything: RunningServer;
beforeAll(async () => {
  everything = await startEverything();
});
afterAll(async () => {
  await everything?.stop();
});

const yaml = () =>
  demoYaml({
    capabilities: `  filesystem:\n    scope: .\n  network:\n    allow: ['http://127.0.0.1:${everything.port}']`,
    top: `mcp:\n  servers:\n    - {name: everything, url: '${everything.url}', tools: [get-sum]}`,
  });

describe('MCP tools from a script capsule', () => {
  it('invoke calls an MCP tool by its mcp__<server>__<tool> name; the call is traced', async () => {
    const s = await sessions.open(yaml());
    const out = await s.runTask(
      task(
        program(
          { op: 'invoke', name: 'mcp__everything__get-sum', data: { a: 1, b: 2 } },
          { op: 'invoke', name: 'mcp__everything__get-sum', data: 'not json' },
          { op: 'invoke', name: 'mcp__everything__echo', data: { message: 'x' } },
        ),
      ),
    );
    expect(out.exit).toBe('completed');
    const [sum, bad, undeclared] = results(out.text);
    expect(sum).toMatchObject({ ok: true, value: { status: 'passed', data: 'The sum of 1 and 2 is 3.' } });
    expect(bad).toMatchObject({ ok: true, value: { status: 'error', summary: "MCP tool 'mcp__everything__get-sum' takes a JSON object as its input" } });
    // Only the tools the manifest names are callable.
    expect(undeclared!.ok).toBe(false);
    expect(undeclared!.error).toContain("tool 'mcp__everything__echo' is not declared");
    const trace = traceOf(s.staged);
    expect(trace.find((e) => e.event_type === 'session_start').tools_declared).toEqual(['echo-tool', 'mcp__everything__get-sum']);
    expect(trace.filter((e) => e.event_type === 'tool_call')[0]).toMatchObject({
      caller: 'capsule',
      tool_name: 'mcp__everything__get-sum',
      status: 'ok',
      kind: 'mcp',
    });
    expect(trace.filter((e) => e.event_type === 'mcp_call')).toEqual([expect.objectContaining({ server: 'everything', tool: 'get-sum', status: 'ok' })]);
  });
});
