/**
 * murmur:text/chunks end to end: a real tool component's emit-chunk, during an A2A task served
 * through the agent loop, reaches the task's SSE stream as a `response` artifact update.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { taskExecutor } from '../../runtime/compose/a2a-bridge.ts';
import { capsuleYaml, driverDef, openKit, PROBE_TOOL, type Kit } from '../loop/kit.ts';
import { closeAll, msg03, serve, sse } from './helpers.ts';

let kit: Kit | undefined;
afterEach(async () => {
  await closeAll();
  await kit?.close();
  kit = undefined;
});
afterAll(closeAll);

describe('text chunks from a component', () => {
  it('a tool’s emit-chunk reaches the A2A stream of the task that called it, before the final status', async () => {
    kit = await openKit({
      yaml: capsuleYaml({ name: 'chunky', tools: ['probe'] }),
      artifacts: [driverDef('anthropic'), PROBE_TOOL],
      script: { turns: [{ toolCalls: [{ name: 'probe', input: { op: 'chunk', text: 'partial from the tool' } }] }, { text: 'final answer' }] },
    });
    const server = await serve(taskExecutor(kit.session));
    const frames = await sse(server.url, 'message/stream', { message: msg03('stream it') });
    const results = frames.map((f) => f.result);
    const texts = (r: any) => (r?.artifact?.parts ?? []).map((p: any) => p.text).join('');
    const chunkAt = results.findIndex((r) => r?.kind === 'artifact-update' && r.artifact?.name === 'response' && texts(r).includes('partial from the tool'));
    const finalAt = results.findIndex((r) => r?.kind === 'status-update' && r.final);
    expect(chunkAt).toBeGreaterThan(-1);
    expect(finalAt).toBeGreaterThan(chunkAt);
    expect(results[finalAt].status.state).toBe('completed');
  });
});
