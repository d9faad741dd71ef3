/**
 * Two capsules, each served over its own real A2A server, each exporting to the same in-process
 * OTLP receiver with its own resource: the caller's model delegates to the callee with
 * delegate-task, and the callee's invoke_agent nests under the caller's execute_tool span.
 */
import { describe, expect, it } from 'vitest';
import { sendMessage } from '../../runtime/a2a/peers/client.ts';
import { taskExecutor } from '../../runtime/compose/a2a-bridge.ts';
import { capsuleYaml, driverDef, openKit } from '../loop/kit.ts';
import { childrenOf, outline } from './otlp-receiver.ts';
import { useTracedServing } from './traced-serving.ts';

const traced = useTracedServing();

const ROOT_TRACE = 'a3ce929d0e0e47364bf92f3577b34da6';
const ROOT_SPAN = 'b7ad6b7169203331';

describe('trace context across capsules', () => {
  it("the callee's invoke_agent is a child of the caller's execute_tool delegate-task", async () => {
    const receiver = await traced.receiver();
    const callee = await openKit({
      yaml: capsuleYaml({ name: 'callee', tools: [] }),
      artifacts: [driverDef('anthropic')],
      script: { turns: [{ text: 'the summary', usage: { input: 40, output: 4 } }] },
    });
    traced.track(callee);
    const calleeServer = await traced.serve(callee.session, 'callee', taskExecutor(callee.session));
    const peer = calleeServer.url.replace(/\/$/, '');
    const peerHost = new URL(peer).host;

    const caller = await openKit({
      yaml: capsuleYaml({ name: 'caller', tools: [], extra: `capabilities:\n  network:\n    allow: ["${peerHost}"]` }),
      artifacts: [driverDef('anthropic')],
      script: {
        turns: [
          { toolCalls: [{ name: 'delegate-task', input: { peer, task: 'summarize the report' } }], usage: { input: 60, output: 9 } },
          { text: 'caller done', usage: { input: 80, output: 3 } },
        ],
      },
    });
    traced.track(caller);
    const callerServer = await traced.serve(caller.session, 'caller', taskExecutor(caller.session));

    const sent = await sendMessage({
      peerUrl: callerServer.url,
      allow: [new URL(callerServer.url).host],
      text: 'please delegate',
      wait: true,
      trust: 'trusted',
      bearer: traced.bearer,
      traceparent: `00-${ROOT_TRACE}-${ROOT_SPAN}-01`,
      timeoutMs: 30_000,
    });
    expect(sent.ok && sent.state).toBe('completed');
    expect(sent.ok && sent.text).toBe('caller done');
    // The delegated result reached the caller's model.
    expect(JSON.stringify(caller.provider.requests.at(-1)!.body)).toContain('the summary');

    await traced.flush();
    // Both capsules' spans: the two tasks, three chats, the delegate-task call. (A flush does not
    // wait for a batch export already in flight, so wait for what is read below.)
    await receiver.waitFor(6, (s) => s.traceId === ROOT_TRACE);
    const spans = await receiver.waitFor(1, (s) => s.name === 'invoke_agent callee');

    const callerTask = receiver.spans.find((s) => s.name === 'invoke_agent caller')!;
    const calleeTask = spans[0]!;
    const delegate = receiver.spans.find((s) => s.name === 'execute_tool delegate-task')!;
    expect(callerTask.parentSpanId).toBe(ROOT_SPAN);
    expect(delegate.parentSpanId).toBe(callerTask.spanId);
    expect(calleeTask.parentSpanId).toBe(delegate.spanId);
    expect(new Set(receiver.spans.map((s) => s.traceId))).toEqual(new Set([ROOT_TRACE]));
    expect(callerTask.resource['service.name']).toBe('caller');
    expect(calleeTask.resource['service.name']).toBe('callee');
    expect(calleeTask.attributes).toMatchObject({
      'capsule.task.source': 'a2a',
      'capsule.task.origin': 'peer',
      'capsule.task.trust': 'trusted',
      'gen_ai.usage.input_tokens': 40,
    });
    expect(outline(receiver.spans, callerTask)).toEqual([
      'invoke_agent caller',
      '  chat claude-test',
      '  execute_tool delegate-task',
      '    invoke_agent callee',
      '      chat claude-test',
      '  chat claude-test',
    ]);
    expect(childrenOf(receiver.spans, delegate)).toHaveLength(1);
    expect(delegate.attributes).toMatchObject({ 'capsule.tool.kind': 'runtime', 'capsule.tool.status': 'ok' });
  });
});
