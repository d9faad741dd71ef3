/**
 * An MCP server's elicitation across a restart (docs/a2a.md "Restart"): the elicitation makes the
 * task `input-required` with a resume point of the loop; a new session (as a new `mur serve` process
 * opens one) resumes the task from that point with the caller's reply: the MCP tool call is made
 * again to the real reference server `@modelcontextprotocol/server-everything`, and its elicitation
 * is answered from the reply without asking anyone. Real sessions, the real Anthropic driver
 * component, the scripted provider.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../runtime/trace/read.ts';
import type { TaskSink } from '../../runtime/loop/capsule-session.ts';
import { ECHO_TOOL, capsuleYaml, driverDef, openKit, type Kit } from '../loop/kit.ts';
import type { ScriptTurn } from '../provider/scripted-provider.ts';
import { startEverything, type RunningServer } from './servers.ts';

let everything: RunningServer;
const kits: Kit[] = [];
beforeAll(async () => {
  everything = await startEverything();
});
afterAll(async () => {
  for (const k of kits) await k.close().catch(() => {});
  await everything?.stop();
});

async function open(turns: ScriptTurn[]): Promise<Kit> {
  const port = new URL(everything.url).port;
  const extra = `capabilities:\n  network:\n    allow: ['http://127.0.0.1:${port}']\nmcp:\n  servers:\n    - {name: everything, url: '${everything.url}', tools: [trigger-elicitation-request]}\n`;
  const yaml = capsuleYaml({ name: 'mcp-capsule', tools: [ECHO_TOOL.name], extra });
  const k = await openKit({ yaml, artifacts: [driverDef('anthropic'), ECHO_TOOL], script: { turns } });
  kits.push(k);
  return k;
}

const sink = (requestInput: TaskSink['requestInput']): TaskSink => ({
  textChunk: () => {},
  thinkingChunk: () => {},
  status: () => {},
  artifact: () => {},
  requestInput,
});
const TASK = { taskId: 't-elicit', contextId: 'ctx-elicit', text: 'ask me for my name', source: 'a2a' as const };

describe('an MCP elicitation resumed in another session', () => {
  it('re-makes the MCP tool call and answers the elicitation from the reply; the task completes with it', async () => {
    const first = await open([{ toolCalls: [{ name: 'mcp__everything__trigger-elicitation-request', input: {} }] }]);
    const stop = new AbortController();
    let point: object | undefined;
    const asked = new Promise<string>((resolve) => {
      void first.session.runTask(
        TASK,
        sink(async (prompt, resume) => {
          point = resume;
          resolve(prompt);
          // The caller never answers here: this process is the one that stops.
          return new Promise<string>((_, reject) => stop.signal.addEventListener('abort', () => reject(new Error('stopped'))));
        }),
        stop.signal,
      );
    });
    expect(await asked).toMatch(/^MCP server 'everything' asks: Please provide inputs/);
    expect(point).toMatchObject({ v: 1, call: { name: 'mcp__everything__trigger-elicitation-request' }, turn: 1 });
    stop.abort();
    // Through JSON, as the store keeps it.
    const stored = JSON.parse(JSON.stringify(point));

    const second = await open([{ text: 'thanks, Ada' }]);
    const askedAgain: string[] = [];
    const reply = JSON.stringify({ name: 'Ada Lovelace', check: true });
    const r = await second.session.resumeTask(
      stored,
      reply,
      sink(async (prompt) => {
        askedAgain.push(prompt);
        return 'not this';
      }),
    );
    expect(r).toMatchObject({ exit: 'completed', text: 'thanks, Ada' });
    expect(askedAgain).toEqual([]);
    const sent = JSON.stringify(second.provider.requests.at(-1)!.body);
    expect(sent).toContain('User provided the requested information');
    expect(sent).toContain('Ada Lovelace');
    expect(sent).toContain('ask me for my name');
    const events = readTrace(second.session.staged.workdir.trace).events;
    expect(events.find((e) => e.event_type === 'task_resumed')).toMatchObject({
      task_id: 't-elicit',
      tool_name: 'mcp__everything__trigger-elicitation-request',
      turn: 1,
    });
    expect(events.filter((e) => e.event_type === 'mcp_call')).toHaveLength(1);
  }, 240_000);
});
