/**
 * Secrets never leave the runtime in what it writes or answers (issue 38 §2): a provider that
 * quotes the key back in its error body (`invalid x-api-key: <key>`) — the scripted provider, told
 * to echo the key its request carried — fails the task, and the key is in none of: the A2A answer,
 * trace.jsonl, the files of the session workdir (the driver's log among them), the lines `mur serve`
 * prints, the spans it exports, /metrics. Plus the redactor itself (runtime/secrets.ts).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { getTask, sendMessage } from '../../runtime/a2a/peers/client.ts';
import { REDACTED, holdSecret, redact, redactDeep } from '../../runtime/secrets.ts';
import { capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider } from '../provider/scripted-provider.ts';
import { startOtlpReceiver } from '../telemetry/otlp-receiver.ts';
import { freePort, serve } from '../cli/serve-kit.ts';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

/** Every file under dir, as [path, text]. */
function filesUnder(dir: string): [string, string][] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? filesUnder(p) : [[p, readFileSync(p, 'latin1')] as [string, string]];
  });
}

describe('the redactor', () => {
  it('replaces a held secret verbatim, URL-encoded and JSON-escaped, and lets go of a released one', () => {
    const secret = `p@ss "w/rd" ${crypto.randomUUID()}`;
    const release = holdSecret(secret);
    const text = `a ${secret} b ${encodeURIComponent(secret)} c ${JSON.stringify({ m: secret })} d ${JSON.stringify(JSON.stringify({ m: secret }))}`;
    const out = redact(text);
    expect(out).not.toContain(secret);
    expect(out).not.toContain(encodeURIComponent(secret));
    expect(out).not.toContain(JSON.stringify(secret).slice(1, -1));
    expect(out.split(REDACTED)).toHaveLength(5);
    expect(redactDeep({ list: [`x ${secret}`], [secret]: 1, n: 2 })).toEqual({ list: [`x ${REDACTED}`], [REDACTED]: 1, n: 2 });
    release();
    expect(redact(text)).toBe(text);
  });

  it('leaves values too short to be secrets alone (they would garble every answer)', () => {
    holdSecret('abc');
    expect(redact('abc abc')).toBe('abc abc');
  });
});

describe('a provider that quotes the key back', () => {
  it('reaches neither the A2A answer, nor trace.jsonl, the workdir files, the logs, the spans or /metrics', async () => {
    const key = `sk-ant-api03-${crypto.randomUUID()}`;
    const provider = await startScriptedProvider({
      turns: [{ error: { status: 401, type: 'authentication_error', message: 'invalid x-api-key', echoKey: true } }],
    });
    const receiver = await startOtlpReceiver();
    cleanup.push(
      () => provider.stop(),
      () => receiver.close(),
    );
    const registry = await makeRegistry([driverDef('anthropic')]);
    const capsule = tmp('redact-capsule-');
    writeFileSync(join(capsule, 'murmur.yaml'), capsuleYaml({ name: 'quoted', tools: [] }));
    const workRoot = tmp('redact-work-');
    const metricsPort = await freePort();
    const served = await serve(capsule, {
      registry,
      workRoot,
      env: {
        MURMUR_INFERENCE_ENDPOINT: provider.url,
        MURMUR_INFERENCE_API_KEY: key,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
      args: ['--metrics-port', String(metricsPort)],
    });
    cleanup.push(() => served.stop());

    const sent = await sendMessage({ peerUrl: served.url, text: 'answer me', allow: [served.url], wait: true });
    // The provider did quote the key: what follows is the runtime's doing.
    expect(provider.requests[0]!.error).toBe(`invalid x-api-key: ${key}`);
    expect(sent.ok && sent.state).toBe('failed');
    const task = await getTask({ peerUrl: served.url, allow: [served.url], taskId: sent.ok ? sent.taskId : '' });
    const answer = JSON.stringify([sent, task]);
    expect(answer).not.toContain(key);
    expect(answer).toContain(`invalid x-api-key: ${REDACTED}`);

    const files = filesUnder(workRoot);
    const trace = files.find(([p]) => p.endsWith('trace.jsonl'));
    expect(trace?.[1]).toContain(`invalid x-api-key: ${REDACTED}`);
    for (const [p, text] of files) expect(text.includes(key), `the key is in ${p}`).toBe(false);

    const [span] = await receiver.waitFor(1, (sp) => sp.name.startsWith('invoke_agent'));
    expect(span).toBeDefined();
    const spans = JSON.stringify(receiver.spans, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
    expect(spans).not.toContain(key);
    expect(spans).toContain(REDACTED);
    expect(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()).not.toContain(key);
    await served.stop();
    expect(served.output()).not.toContain(key);
  });

  it('reaches none of the lines `mur run` prints, nor its session workdir', async () => {
    const key = `sk-ant-api03-${crypto.randomUUID()}`;
    const provider = await startScriptedProvider({
      turns: [{ error: { status: 401, type: 'authentication_error', message: 'invalid x-api-key', echoKey: true } }],
    });
    cleanup.push(() => provider.stop());
    const registry = await makeRegistry([driverDef('anthropic')]);
    const capsule = tmp('redact-run-');
    writeFileSync(join(capsule, 'murmur.yaml'), capsuleYaml({ name: 'quoted-run', tools: [] }));
    const workRoot = tmp('redact-run-work-');
    const proc = spawn(
      process.execPath,
      [join(PROJECT_ROOT, 'bin/mur'), 'run', capsule, '--task', 'answer me', '--registry', registry, '--work-root', workRoot],
      {
        env: { PATH: process.env.PATH, MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: key },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    proc.stdout.on('data', (d: Buffer) => (output += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const code = await new Promise<number | null>((r) => proc.once('close', r));
    expect(provider.requests[0]!.error).toBe(`invalid x-api-key: ${key}`);
    expect(code, output).toBe(1);
    expect(output).toContain(`invalid x-api-key: ${REDACTED}`);
    expect(output).not.toContain(key);
    for (const [p, text] of filesUnder(workRoot)) expect(text.includes(key), `the key is in ${p}`).toBe(false);
  });
});
