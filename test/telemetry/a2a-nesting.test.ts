/**
 * Two capsules, each served over its own real A2A server, each exporting to the same in-process
 * OTLP receiver with its own resource: the caller's model delegates to the callee with
 * delegate-task, and the callee's invoke_agent nests under the caller's execute_tool span.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startA2AServer, type A2AServer } from '../../runtime/a2a/server.ts';
import { sendMessage } from '../../runtime/a2a/client.ts';
import { taskExecutor } from '../../runtime/loop/a2a-bridge.ts';
import { instrumentSession, setupTelemetry, type SessionTelemetry, type Telemetry } from '../../runtime/telemetry/index.ts';
import { capsuleYaml, driverDef, openKit, type Kit } from '../loop/kit.ts';
import { childrenOf, outline, startOtlpReceiver, type OtlpReceiver } from './otlp-receiver.ts';

const kits: Kit[] = [];
const servers: A2AServer[] = [];
const tels: Telemetry[] = [];
const instr: SessionTelemetry[] = [];
let receiver: OtlpReceiver | undefined;

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  await Promise.all(kits.splice(0).map((k) => k.close().catch(() => {})));
  await Promise.all(instr.splice(0).map((t) => t.shutdown()));
  await Promise.all(tels.splice(0).map((t) => t.shutdown()));
  await receiver?.close();
  receiver = undefined;
});

async function serveCapsule(kit: Kit, name: string, endpoint: string): Promise<A2AServer> {
  const tel = setupTelemetry({ serviceName: name, serviceVersion: '1.0.0', endpoint, protocol: 'http/json', env: {}, batch: { scheduledDelayMillis: 20 }, current: false });
  tels.push(tel);
  instr.push(instrumentSession(kit.session, { telemetry: tel }));
  const s = await startA2AServer({ card: { name, version: '1.0.0', description: name, skills: [{ id: 'work', description: 'work' }] }, executor: taskExecutor(kit.session), acceptance: 'queue', queueDepth: 4 });
  servers.push(s);
  return s;
}

const ROOT_TRACE = 'a3ce929d0e0e47364bf92f3577b34da6';
const ROOT_SPAN = 'b7ad6b7169203331';

describe('trace context across capsules', () => {
  it("the callee's invoke_agent is a child of the caller's execute_tool delegate-task", async () => {
    receiver = await startOtlpReceiver();
    const callee = await openKit({ yaml: capsuleYaml({ name: 'callee', tools: [] }), artifacts: [driverDef('anthropic')], script: { turns: [{ text: 'the summary', usage: { input: 40, output: 4 } }] } });
    kits.push(callee);
    const calleeServer = await serveCapsule(callee, 'callee', receiver.url);
    const peer = calleeServer.url.replace(/\/$/, '');
    const peerHost = new URL(peer).host;

    const caller = await openKit({
      yaml: capsuleYaml({ name: 'caller', tools: [], extra: `capabilities:\n  network:\n    allow: ["${peerHost}"]` }),
      artifacts: [driverDef('anthropic')],
      script: { turns: [{ toolCalls: [{ name: 'delegate-task', input: { peer, task: 'summarize the report' } }], usage: { input: 60, output: 9 } }, { text: 'caller done', usage: { input: 80, output: 3 } }] },
    });
    kits.push(caller);
    const callerServer = await serveCapsule(caller, 'caller', receiver.url);

    const sent = await sendMessage({
      peerUrl: callerServer.url, allow: [new URL(callerServer.url).host], text: 'please delegate', wait: true, trust: 'trusted',
      traceparent: `00-${ROOT_TRACE}-${ROOT_SPAN}-01`, timeoutMs: 30_000,
    });
    expect(sent.ok && sent.state).toBe('completed');
    expect(sent.ok && sent.text).toBe('caller done');
    // The delegated result reached the caller's model.
    expect(JSON.stringify(caller.provider.requests.at(-1)!.body)).toContain('the summary');

    await Promise.all(instr.map((t) => t.shutdown()));
    await Promise.all(tels.map((t) => t.flush()));
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
    expect(calleeTask.attributes).toMatchObject({ 'capsule.task.source': 'a2a', 'capsule.task.origin': 'peer', 'capsule.task.trust': 'trusted', 'gen_ai.usage.input_tokens': 40 });
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
