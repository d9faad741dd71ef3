/**
 * Capsules as separate `mur serve` processes on 127.0.0.1: A2A end to end through the agent loop,
 * peering with delegate-task (allowed and refused), request-input through a real tool component,
 * and cancel.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ClientFactory } from '@a2a-js/sdk/client';
import { Role, TaskState } from '@a2a-js/sdk';
import { readTrace } from '../../runtime/trace/read.ts';
import { sendMessage, getTask, cancelTask } from '../../runtime/a2a/peers/client.ts';
import { API_KEY, ECHO_TOOL, capsuleYaml, driverDef, makeRegistry, openKit, tmp, type ArtifactDef, PROBE_TOOL } from '../loop/kit.ts';
import { startScriptedProvider, type ScriptedProvider } from '../provider/scripted-provider.ts';
import { freePort, serve, type Served } from './serve-kit.ts';
import { startOtlpReceiver } from '../telemetry/otlp-receiver.ts';
import { demoYaml, program, scriptRegistry } from '../script/helpers.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

async function servedCapsule(o: {
  name: string;
  turns: Parameters<typeof startScriptedProvider>[0];
  tools?: ArtifactDef[];
  extra?: string;
  args?: string[];
}): Promise<{ served: Served; provider: ScriptedProvider; workRoot: string }> {
  const provider = await startScriptedProvider(o.turns);
  const tools = o.tools ?? [ECHO_TOOL];
  const registry = await makeRegistry([driverDef('anthropic'), ...tools]);
  const capsule = tmp(`serve-${o.name}-`);
  writeFileSync(
    join(capsule, 'murmur.yaml'),
    capsuleYaml({ name: o.name, tools: tools.map((t) => t.name), extra: `lifecycle:\n  task_acceptance: queue\n  queue_depth: 4\n${o.extra ?? ''}` }),
  );
  const workRoot = tmp('serve-work-');
  const served = await serve(capsule, {
    registry,
    workRoot,
    env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
    args: o.args,
  });
  cleanup.push(
    () => served.stop(),
    () => provider.stop(),
  );
  return { served, provider, workRoot };
}

function traceOf(served: Served): ReturnType<typeof readTrace>['events'] {
  const m = /session (ses_[0-9a-f]{32})/.exec(served.output());
  const workdir = /workdir (\S+)/.exec(served.output());
  void workdir;
  return m ? readTrace(join(served.proc.spawnargs[served.proc.spawnargs.indexOf('--workdir') + 1]!, m[1]!, 'trace.jsonl')).events : [];
}

describe('mur serve', () => {
  it('serves Prometheus /metrics on its own port, with the task’s token usage, and health on both', async () => {
    const metricsPort = await freePort();
    const { served } = await servedCapsule({
      name: 'metered',
      turns: { turns: [{ text: 'metered answer', usage: { input: 321, output: 12 } }] },
      args: ['--metrics-port', String(metricsPort)],
    });
    const done = await sendMessage({ peerUrl: served.url, text: 'count me', allow: [served.url], wait: true });
    expect(done.ok && done.state).toBe('completed');
    const body = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(body).toMatch(/capsule_tokens_total\{[^}]*token_type="input"[^}]*source="provider"[^}]*\} 321/);
    expect(body).toMatch(/capsule_tasks_total\{[^}]*\} 1/);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/healthz`)).status).toBe(200);
    // The A2A port does not serve metrics.
    expect((await fetch(new URL('/metrics', served.url))).status).not.toBe(200);
  });

  it('exports the task’s spans over OTLP when the environment names a collector (the SDK is loaded only then)', async () => {
    const receiver = await startOtlpReceiver();
    cleanup.push(() => receiver.close());
    const provider = await startScriptedProvider({ turns: [{ text: 'traced answer' }] });
    cleanup.push(() => provider.stop());
    const registry = await makeRegistry([driverDef('anthropic')]);
    const capsule = tmp('serve-traced-');
    writeFileSync(join(capsule, 'murmur.yaml'), capsuleYaml({ name: 'traced', tools: [] }));
    const served = await serve(capsule, {
      registry,
      workRoot: tmp('serve-work-'),
      env: {
        MURMUR_INFERENCE_ENDPOINT: provider.url,
        MURMUR_INFERENCE_API_KEY: API_KEY,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
    });
    cleanup.push(() => served.stop());
    const done = await sendMessage({ peerUrl: served.url, text: 'trace me', allow: [served.url], wait: true });
    expect(done.ok && done.state).toBe('completed');
    const [task] = await receiver.waitFor(1, (sp) => sp.name.startsWith('invoke_agent'));
    expect(task!.resource['service.name']).toBe('traced');
  });

  it('serves tasks over A2A to the official SDK client: the agent loop runs and the task completes', async () => {
    const { served } = await servedCapsule({
      name: 'solo',
      turns: { turns: [{ toolCalls: [{ name: 'echo', input: { text: 'q' } }] }, { text: 'answer from solo' }] },
    });
    const client = await new ClientFactory().createFromUrl(served.url);
    const res = await client.sendMessage({
      tenant: '',
      message: {
        messageId: 'm1',
        contextId: '',
        taskId: '',
        role: Role.ROLE_USER,
        parts: [{ content: { $case: 'text', value: 'hello solo' }, metadata: undefined, filename: '', mediaType: '' }],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    });
    const task = res as unknown as { status: { state: number }; artifacts: { name: string; parts: { content: unknown }[] }[] };
    expect(task.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.artifacts.find((a) => a.name === 'response')?.parts[0]?.content).toEqual({ $case: 'text', value: 'answer from solo' });
    expect(task.artifacts.some((a) => a.name === 'tool-call')).toBe(true);
    const ev = traceOf(served);
    expect(ev.find((e) => e.event_type === 'task_start')).toMatchObject({ source: 'a2a', origin: 'user', trust: 'untrusted' });
  });

  it('a capsule delegates to a peer in its allowlist (origin peer, trust carried) and is refused one outside it', async () => {
    // B takes A's trust only from A proven: A's key (as the projected token would be in a pod), and
    // A declared as a trusted caller. A finds its credential for B's host in its peer-tokens folder.
    const peerKey = `peer-key-${crypto.randomUUID()}`;
    const keys = join(tmp('serve-keys-'), 'keys.txt');
    writeFileSync(keys, `caller-a:${peerKey}\n`);
    const tokens = tmp('serve-peer-tokens-');
    writeFileSync(join(tokens, '127.0.0.1'), peerKey);
    process.env.MURMUR_A2A_PEER_TOKENS_DIR = tokens;
    cleanup.push(async () => delete process.env.MURMUR_A2A_PEER_TOKENS_DIR);
    const { served: b, provider: providerB } = await servedCapsule({
      name: 'peer-b',
      turns: { turns: [{ text: 'B did the work' }], onExhausted: 'repeat-last' },
      args: ['--api-keys', keys, '--trusted-callers', 'apikey:caller-a'],
    });
    const { served: c, provider: providerC } = await servedCapsule({ name: 'peer-c', turns: { turns: [{ text: 'C should never run' }] } });
    const kit = await openKit({
      yaml: capsuleYaml({ name: 'caller-a', extra: `capabilities:\n  network:\n    allow: ["${b.url.replace(/\/$/, '')}"]\n` }),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: {
        turns: [
          { toolCalls: [{ name: 'delegate-task', input: { peer: b.url, task: 'summarize the news' } }] },
          { toolCalls: [{ name: 'delegate-task', input: { peer: c.url, task: 'sneak past the allowlist' } }] },
          { text: 'A is done' },
        ],
      },
    });
    cleanup.push(() => kit.close());
    const r = await kit.session.runTask({ taskId: 'a1', contextId: 'ctx-a', text: 'use your peer', source: 'task_md', trust: 'trusted' });
    expect(r.exit).toBe('completed');
    const bodies = JSON.stringify(kit.provider.requests.map((q) => q.body));
    expect(bodies).toContain('B did the work');
    expect(bodies).toContain(`network policy: '${c.url}' not in capabilities.network.allow`);
    expect(JSON.stringify(providerB.requests[0]!.body)).toContain('summarize the news');
    expect(providerC.requests).toHaveLength(0);
    const bStart = traceOf(b).find((e) => e.event_type === 'task_start');
    expect(bStart).toMatchObject({ origin: 'peer', trust: 'trusted' });
  });

  it('request-input from a real tool component: the task goes input-required, the next message/send answers it', async () => {
    const { served } = await servedCapsule({
      name: 'asker',
      tools: [PROBE_TOOL],
      turns: { turns: [{ toolCalls: [{ name: 'probe', input: { op: 'ask', prompt: 'Which colour?' } }] }, { text: 'got the colour' }] },
    });
    const first = await sendMessage({ peerUrl: served.url, text: 'paint it', allow: [served.url], wait: true });
    expect(first.ok && first.state).toBe('input-required');
    if (!first.ok) return;
    expect(first.statusText).toContain('Which colour?');
    const reply = await sendMessage({ peerUrl: served.url, text: 'blue', taskId: first.taskId, contextId: first.contextId, allow: [served.url], wait: true });
    expect(reply.ok && reply.state).toBe('completed');
    const t = await getTask({ peerUrl: served.url, taskId: first.taskId, allow: [served.url] });
    expect(t.ok && t.state).toBe('completed');
  });

  it('tasks/cancel during a slow inference call ends the task canceled, and the capsule serves the next task', async () => {
    // The provider holds the first answer until the test ends: the inference call is in flight
    // from the request's arrival on.
    let arrived!: () => void;
    let release!: () => void;
    const inFlight = new Promise<void>((r) => (arrived = r));
    const released = new Promise<void>((r) => (release = r));
    const { served } = await servedCapsule({
      name: 'slow',
      turns: { turns: [{ text: 'too late', hold: () => (arrived(), released) }, { text: 'second task fine' }] },
    });
    cleanup.push(async () => release()); // runs first (cleanup runs in reverse)
    const sent = await sendMessage({ peerUrl: served.url, text: 'take your time', allow: [served.url] });
    expect(sent.ok).toBe(true);
    if (!sent.ok) return;
    await inFlight;
    const c = await cancelTask({ peerUrl: served.url, taskId: sent.taskId, allow: [served.url] });
    expect(c.ok && c.state).toBe('canceled');
    const next = await sendMessage({ peerUrl: served.url, text: 'next', allow: [served.url], wait: true });
    expect(next.ok && next.state).toBe('completed');
  });

  it('serves a script capsule: each A2A task runs the capsule component’s run export', async () => {
    const registry = await scriptRegistry();
    const capsule = tmp('serve-script-');
    writeFileSync(join(capsule, 'murmur.yaml'), demoYaml({ top: 'lifecycle:\n  task_acceptance: queue\n  queue_depth: 2' }));
    const served = await serve(capsule, { registry, workRoot: tmp('serve-script-work-'), env: {} });
    cleanup.push(() => served.stop());
    const r = await sendMessage({
      peerUrl: served.url,
      text: program({ op: 'invoke', name: 'echo-tool', data: 'served script' }),
      allow: [served.url],
      wait: true,
    });
    expect(r.ok && r.state).toBe('completed');
    if (!r.ok) return;
    expect(r.text).toContain('served script');
  });

  it('task_acceptance single: ready until it has its task, which is answered to its blocking caller; then the capsule exits', async () => {
    const provider = await startScriptedProvider({ turns: [{ text: 'the only answer' }] });
    cleanup.push(() => provider.stop());
    const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
    const capsule = tmp('serve-single-');
    writeFileSync(join(capsule, 'murmur.yaml'), capsuleYaml({ name: 'single', extra: 'lifecycle:\n  task_acceptance: single' }));
    const metricsPort = await freePort();
    const served = await serve(capsule, {
      registry,
      workRoot: tmp('serve-single-work-'),
      env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
      args: ['--metrics-port', String(metricsPort)],
    });
    cleanup.push(() => served.stop());
    const readyz = () =>
      fetch(`http://127.0.0.1:${metricsPort}/readyz`).then(
        (x) => x.status,
        () => 0,
      );
    expect(await readyz()).toBe(200);
    const r = await sendMessage({ peerUrl: served.url, text: 'just one', allow: [served.url], wait: true });
    expect(r.ok && r.state).toBe('completed');
    expect(r.ok && r.text).toBe('the only answer');
    // It has its one task: no longer ready (a Service stops routing to it) while it winds down.
    expect(await readyz()).toBe(503);
    expect(await served.exited).toBe(0);
  });

  it('an on-compaction error ends the session: the task fails, the server stops taking tasks and exits 1, session_end says failed', async () => {
    const provider = await startScriptedProvider({ turns: [{ text: 'a long answer that fills the small window' }] });
    cleanup.push(() => provider.stop());
    const squash: ArtifactDef = {
      component: 'hook-script',
      name: 'squash',
      runtime: 'hook',
      extra: 'binding: on-compaction\ncommit_policy: replace-context\n',
    };
    const registry = await makeRegistry([driverDef('anthropic'), squash]);
    const capsule = tmp('serve-compaction-');
    writeFileSync(
      join(capsule, 'murmur.yaml'),
      [
        'name: squashed',
        'version: 1.0.0',
        'artifacts:',
        '  - {name: driver-anthropic, version: 0.1.0, runtime: driver}',
        `  - {name: squash, version: 1.0.0, runtime: hook, config: ${JSON.stringify({ script: { 'on-compaction': { err: 'cannot summarize' } } })}}`,
        'inference:',
        '  driver: {artifact: driver-anthropic}',
        '  model: claude-test',
        'context:',
        '  max_tokens: 60',
        'lifecycle:',
        '  task_acceptance: queue',
      ].join('\n'),
    );
    const workRoot = tmp('serve-compaction-work-');
    const served = await serve(capsule, { registry, workRoot, env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY } });
    cleanup.push(() => served.stop());
    const r = await sendMessage({ peerUrl: served.url, text: 'fill the window', allow: [served.url], wait: true });
    expect(r.ok && r.state).toBe('failed');
    expect(await served.exited).toBe(1);
    expect(served.output()).toContain('session ended (failed): an on-compaction hook failed; stopping');
    const ev = traceOf(served);
    expect(ev.filter((e) => e.event_type === 'task_end')).toMatchObject([{ exit_status: 'failed' }]);
    expect(ev.find((e) => e.event_type === 'session_end')).toMatchObject({ exit_status: 'failed' });
  });
});
