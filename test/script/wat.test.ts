/**
 * The second guest toolchain: a script capsule and a tool written by hand in WebAssembly text
 * (test/fixtures/build-wat.ts: wasm-tools parse + component embed + component new, no JS engine,
 * no WASI), running on the same host next to componentize-js components.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadComponent } from '../../runtime/host/index.ts';
import { ScriptSession } from '../../runtime/script/script-session.ts';
import { demoYaml, fixtures, program, results, stageYaml, task, traceOf, useScriptSessions } from './helpers.ts';

const sessions = useScriptSessions();

const watCapsuleYaml = `${[
  'name: wat-demo',
  'version: 0.1.0',
  'artifacts:',
  '  - name: wat-demo',
  '    version: 1.0.0',
  '  - name: script-wat-tool',
  '    version: 1.0.0',
  '  - name: echo-tool',
  '    version: 1.0.0',
  'trace:',
  '  include_tool_output: true',
].join('\n')}\n`;

describe('WAT-built components', () => {
  it('are real components with no WASI imports and no JS engine inside', async () => {
    const f = await fixtures();
    const tool = await loadComponent(f.watTool);
    const capsule = await loadComponent(f.watCapsule);
    expect(tool.imports).toEqual([]);
    expect(tool.exports).toContain('murmur:tool/run@0.1.0');
    expect(capsule.imports).toEqual(['murmur:tool-registry/invoke']);
    expect(capsule.exports).toContain('murmur:capsule/run@0.1.0');
    // Kilobytes, not the megabytes of an embedded JS engine.
    expect(readFileSync(f.watTool).byteLength).toBeLessThan(16 * 1024);
    expect(readFileSync(f.watCapsule).byteLength).toBeLessThan(16 * 1024);
  });

  it('a WAT capsule invokes a WAT tool and a componentize-js tool, and reads an err back', async () => {
    const staged = await stageYaml(sessions.registry(), watCapsuleYaml);
    const s = sessions.track(await ScriptSession.open(staged));
    const out = await s.runTask(task('ignored: this capsule reads no files'));
    // The capsule traps on any unexpected answer, so completed = every value crossed intact.
    expect(out).toEqual({ exit: 'completed' });
    const calls = traceOf(staged).filter((e) => e.event_type === 'tool_call');
    expect(calls.map((c) => [c.tool_name, c.status])).toEqual([
      ['script-wat-tool', 'ok'],
      ['echo-tool', 'ok'],
      ['not-declared', 'error'],
      ['script-wat-tool', 'ok'],
    ]);
    expect(calls[0]).toMatchObject({
      input: 'hello from wat',
      output: 'HELLO FROM WAT',
      state_effect: 'read',
      resource_id: 'wat:upper',
      tool_status: 'passed',
    });
    expect(calls[1]).toMatchObject({ input: 'HELLO FROM WAT', output: JSON.stringify({ echo: 'HELLO FROM WAT', calls: 1 }) });
    const err = calls[2].error as string;
    expect(err).toMatch(/^tool 'not-declared' is not declared in .*murmur\.yaml \(callable tools: script-wat-tool, echo-tool\)/);
    // The err string reached the WAT capsule's memory and came back as the next call's input.
    expect(calls[3]).toMatchObject({ input: err, output: err.toUpperCase() });
  });

  it('a JS capsule invokes the WAT tool, including its failed status', async () => {
    const staged = await stageYaml(sessions.registry(), demoYaml({ artifacts: '  - name: script-wat-tool\n    version: 1.0.0' }));
    const s = sessions.track(await ScriptSession.open(staged));
    const out = await s.runTask(
      task(program({ op: 'invoke', name: 'script-wat-tool', data: 'mixed Case ünïcode' }, { op: 'invoke', name: 'script-wat-tool' })),
    );
    const [upper, none] = results(out.text);
    expect(upper!.value).toEqual({
      status: 'passed',
      summary: 'wat-upper',
      data: 'MIXED CASE üNïCODE',
      dataPath: null,
      truncated: false,
      metadata: [
        ['state_effect', 'read'],
        ['resource_id', 'wat:upper'],
      ],
    });
    expect(none!.value).toMatchObject({ status: 'failed', summary: 'wat-upper: no input', data: null });
  });
});
