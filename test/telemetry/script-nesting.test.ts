/**
 * A script capsule served over A2A with telemetry: its task span nests under the caller's
 * traceparent, and a message/send it makes carries its own traceparent, so the peer's task span
 * nests under the script capsule's (wit-interfaces.md, message/send › Tracing).
 */
import { describe, expect, it } from 'vitest';
import { sendMessage } from '../../runtime/a2a/peers/client.ts';
import { taskExecutor } from '../../runtime/compose/a2a-bridge.ts';
import { scriptTaskExecutor } from '../../runtime/script/serve.ts';
import { capsuleYaml, driverDef, openKit } from '../loop/kit.ts';
import { demoYaml, program, results, useScriptSessions } from '../script/helpers.ts';
import { useTracedServing } from './traced-serving.ts';

const sessions = useScriptSessions();
const traced = useTracedServing();

const ROOT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const ROOT_SPAN = '00f067aa0ba902b7';

describe('script capsule tracing', () => {
  it('the task span nests under the caller; its tool calls and the peer of its message/send nest under the task', async () => {
    const receiver = await traced.receiver();
    // The peer: an agent capsule, served and instrumented.
    const callee = await openKit({
      yaml: capsuleYaml({ name: 'callee', tools: [] }),
      artifacts: [driverDef('anthropic')],
      script: { turns: [{ text: 'peer answer' }] },
    });
    traced.track(callee);
    const peer = await traced.serve(callee.session, 'callee', taskExecutor(callee.session));

    // The script capsule, allowed to reach the peer.
    const script = await sessions.open(demoYaml({ capabilities: `  network:\n    allow: ["127.0.0.1:${peer.port}"]` }));
    const front = await traced.serve(script, 'demo', scriptTaskExecutor(script));

    const sent = await sendMessage({
      peerUrl: front.url,
      allow: [new URL(front.url).host],
      wait: true,
      trust: 'trusted',
      bearer: traced.bearer,
      timeoutMs: 30_000,
      text: program({ op: 'invoke', name: 'echo-tool', data: 'x' }, { op: 'send', url: peer.url, text: 'summarize', messageId: 'm-trace' }),
      traceparent: `00-${ROOT_TRACE}-${ROOT_SPAN}-01`,
    });
    expect(sent.ok && sent.state).toBe('completed');
    expect(results(sent.ok ? sent.text : undefined).map((r) => r.ok)).toEqual([true, true]);
    await peer.idle();

    const [calleeTask] = await receiver.waitFor(1, (s) => s.name === 'invoke_agent callee');
    const [scriptTask] = await receiver.waitFor(1, (s) => s.name === 'invoke_agent demo');
    expect(scriptTask!.parentSpanId).toBe(ROOT_SPAN);
    expect(scriptTask!.traceId).toBe(ROOT_TRACE);
    // runtime/a2a/peers/client.ts stamps every request it sends as coming from a peer.
    expect(scriptTask!.attributes).toMatchObject({ 'capsule.task.source': 'a2a', 'capsule.task.origin': 'peer', 'capsule.task.trust': 'trusted' });
    expect(calleeTask!.traceId).toBe(ROOT_TRACE);
    expect(calleeTask!.parentSpanId).toBe(scriptTask!.spanId);
    expect(calleeTask!.attributes).toMatchObject({ 'capsule.task.origin': 'peer', 'capsule.task.trust': 'trusted' });
    // The capsule's tool call is an execute_tool span under its task.
    const [tool] = await receiver.waitFor(1, (x) => x.name === 'execute_tool echo-tool');
    expect(tool!.parentSpanId).toBe(scriptTask!.spanId);
    expect(tool!.attributes).toMatchObject({ 'capsule.tool.kind': 'wasm', 'capsule.tool.status': 'ok' });
  });
});
