/**
 * murmur:text/chunks end to end: a real tool component's emit-chunk, during an A2A task served
 * through the agent loop, reaches the task's SSE stream as a `response` artifact update; so does the
 * built-in driver's text, as the provider streams it.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { taskExecutor } from '../../runtime/compose/a2a-bridge.ts';
import { capsuleYaml, driverDef, openKit, PROBE_TOOL, type Kit } from '../loop/kit.ts';
import { closeAll, msg03, serve, sse } from './helpers.ts';

let rpcId = 1;
/** POSTs a streaming request and yields each SSE `data:` payload the moment its frame is read. */
async function* frames(url: string, method: string, params: unknown): AsyncGenerator<any> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: rpcId++, method, params }),
  });
  const reader = r.body!.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    for (let end = buf.indexOf('\n\n'); end >= 0; end = buf.indexOf('\n\n')) {
      const data = buf
        .slice(0, end)
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('');
      buf = buf.slice(end + 2);
      if (data !== '') yield JSON.parse(data);
    }
  }
}

const texts = (r: any): string => (r?.artifact?.parts ?? []).map((p: any) => p.text).join('');

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
    const chunkAt = results.findIndex((r) => r?.kind === 'artifact-update' && r.artifact?.name === 'response' && texts(r).includes('partial from the tool'));
    const finalAt = results.findIndex((r) => r?.kind === 'status-update' && r.final);
    expect(chunkAt).toBeGreaterThan(-1);
    expect(finalAt).toBeGreaterThan(chunkAt);
    expect(results[finalAt].status.state).toBe('completed');
  });

  it.each(['anthropic', 'openai'] as const)('%s: the driver’s text reaches the A2A stream while the provider is still streaming the answer', async (api) => {
    // The provider sends its first text delta ("First words.") and then holds the rest of its
    // stream until this test has seen that text on the task's stream.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let holding = false;
    kit = await openKit({
      api,
      yaml: capsuleYaml({ name: 'chunky', api, tools: [] }),
      artifacts: [driverDef(api)],
      script: {
        turns: [
          {
            text: 'First words. The rest comes after them.',
            holdMidStream: () => {
              holding = true;
              return released;
            },
          },
        ],
      },
    });
    const server = await serve(taskExecutor(kit.session));
    const results: any[] = [];
    let seenWhileHeld = false;
    for await (const f of frames(server.url, 'message/stream', { message: msg03('stream it') })) {
      const r = f.result;
      results.push(r);
      if (!seenWhileHeld && r?.kind === 'artifact-update' && r.artifact?.name === 'response' && texts(r).includes('First words.')) {
        seenWhileHeld = holding;
        release();
      }
    }
    expect(seenWhileHeld).toBe(true);
    const final = results.at(-1);
    expect(final.kind).toBe('status-update');
    expect(final.status.state).toBe('completed');
    const streamed = results
      .filter((r) => r?.kind === 'artifact-update' && r.artifact?.name === 'response')
      .map(texts)
      .join('');
    expect(streamed).toContain('The rest comes after them.');
  });
});
