/** Telemetry setup: endpoint resolution, resource, trace context, and a dead or hanging collector. */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  TELEMETRY_OFF,
  formatTraceparent,
  instrumentSession,
  normaliseUsage,
  parseHeaderList,
  parseTraceparent,
  providerFromDriver,
  resolveEndpoint,
  resourceAttributes,
  resetMetrics,
  runtimeMetrics,
  setupTelemetry,
  signalUrl,
  type SessionTelemetry,
} from '../../runtime/telemetry/index.ts';
import { ECHO_TOOL, capsuleYaml, driverDef, openKit, closeOpened, type Kit } from '../loop/kit.ts';
import { startOtlpReceiver, type OtlpReceiver } from './otlp-receiver.ts';
import { parseExposition } from './prom-text.ts';

describe('endpoint resolution', () => {
  it('is off with no endpoint anywhere, and then costs nothing to set up', async () => {
    expect(resolveEndpoint({ env: {} })).toBeUndefined();
    const t = setupTelemetry({ serviceName: 'x', serviceVersion: '1', env: {}, current: false });
    expect(t).toBe(TELEMETRY_OFF);
    expect(t.enabled).toBe(false);
    const span = t.tracer.startSpan('x');
    expect(span.isRecording()).toBe(false);
    await t.shutdown();
  });

  it('manifest endpoint first (base URL), then OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as is), then OTEL_EXPORTER_OTLP_ENDPOINT', () => {
    const env = {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:4318/custom/path',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://base:4318',
      OTEL_EXPORTER_OTLP_HEADERS: 'a=1,b=x%20y',
    };
    expect(resolveEndpoint({ endpoint: 'http://manifest:4318/', headers: { k: 'v' }, env })).toEqual({
      url: 'http://manifest:4318/v1/traces',
      headers: { k: 'v' },
      protocol: 'http/protobuf',
    });
    expect(resolveEndpoint({ env })).toEqual({ url: 'http://traces:4318/custom/path', headers: { a: '1', b: 'x y' }, protocol: 'http/protobuf' });
    expect(resolveEndpoint({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'https://base:4318/otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' } })).toEqual({
      url: 'https://base:4318/otlp/v1/traces',
      headers: {},
      protocol: 'http/json',
    });
    expect(resolveEndpoint({ endpoint: '', env: {} })).toBeUndefined();
  });

  it('OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none turn it off; grpc falls back with a warning', () => {
    expect(resolveEndpoint({ endpoint: 'http://c:4318', env: { OTEL_SDK_DISABLED: 'true' } })).toBeUndefined();
    expect(resolveEndpoint({ endpoint: 'http://c:4318', env: { OTEL_TRACES_EXPORTER: 'none' } })).toBeUndefined();
    const r = resolveEndpoint({ endpoint: 'http://c:4317', env: { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' } });
    expect(r?.protocol).toBe('http/protobuf');
    expect(r?.warning).toMatch(/grpc.*not supported/);
  });

  it('a malformed endpoint from the environment turns tracing off with a warning, never a throw', () => {
    const warnings: string[] = [];
    const t = setupTelemetry({
      serviceName: 'x',
      serviceVersion: '1',
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' },
      warn: (w) => warnings.push(w),
      current: false,
    });
    expect(t).toBe(TELEMETRY_OFF);
    expect(warnings).toEqual([expect.stringMatching(/tracing disabled: .*not a url.*\[E-OBS-003\]$/)]);
  });

  it('header lists and signal URLs', () => {
    expect(parseHeaderList('api-key=abc, x=1=2 ,bad, =nokey')).toEqual({ 'api-key': 'abc', x: '1=2' });
    expect(parseHeaderList(undefined)).toEqual({});
    expect(signalUrl('http://c:4318/v1/traces')).toBe('http://c:4318/v1/traces');
    expect(signalUrl('http://c:4318//')).toBe('http://c:4318/v1/traces');
  });

  it('resource: service name/version, pod and namespace only when set', () => {
    expect(resourceAttributes({ serviceName: 'cap', serviceVersion: '2.0.0', env: {} })).toEqual({ 'service.name': 'cap', 'service.version': '2.0.0' });
    expect(resourceAttributes({ serviceName: 'cap', serviceVersion: '2.0.0', env: { POD_NAME: 'cap-7f9', POD_NAMESPACE: 'team-a', NODE_NAME: 'n1' } })).toEqual(
      {
        'service.name': 'cap',
        'service.version': '2.0.0',
        'k8s.pod.name': 'cap-7f9',
        'k8s.namespace.name': 'team-a',
        'k8s.node.name': 'n1',
      },
    );
  });
});

describe('trace context and conventions', () => {
  it('parses and formats W3C traceparent, refusing invalid ones', () => {
    const sc = parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')!;
    expect(sc).toEqual({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1, isRemote: true });
    expect(formatTraceparent(sc)).toBe('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(formatTraceparent({ ...sc, traceFlags: 0 })).toBe('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00');
    for (const bad of [
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra',
      '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01',
      'garbage',
      '',
    ])
      expect(parseTraceparent(bad), bad).toBeUndefined();
    // A future version may append fields.
    expect(parseTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-abc')?.spanId).toBe('00f067aa0ba902b7');
    expect(formatTraceparent(undefined)).toBeUndefined();
  });

  it('provider name from the driver artifact', () => {
    expect(providerFromDriver('murmur-driver-anthropic')).toBe('anthropic');
    expect(providerFromDriver('driver-openai')).toBe('openai');
    expect(providerFromDriver('driver-vllm-local')).toBe('vllm');
    expect(providerFromDriver('murmur-driver-acme')).toBe('acme');
    expect(providerFromDriver('acme-driver')).toBe('acme');
    expect(providerFromDriver(undefined)).toBe('unknown');
  });

  it('usage: input includes cached tokens (added back for Anthropic); reported members win over host counts', () => {
    const reported = { input_tokens: 10, output_tokens: 3, cached_tokens: 100, cache_write_tokens: 5 };
    expect(normaliseUsage({ input_tokens: 999, output_tokens: 9, reported_usage: reported }, 'anthropic')).toEqual({
      input: 115,
      output: 3,
      cacheRead: 100,
      cacheWrite: 5,
      inputSource: 'provider',
      outputSource: 'provider',
    });
    expect(normaliseUsage({ input_tokens: 999, output_tokens: 9, reported_usage: { input_tokens: 120, cached_tokens: 100 } }, 'openai')).toEqual({
      input: 120,
      output: 9,
      cacheRead: 100,
      inputSource: 'provider',
      outputSource: 'host',
    });
    expect(normaliseUsage({ input_tokens: 999, output_tokens: 9 }, 'openai')).toEqual({ input: 999, output: 9, inputSource: 'host', outputSource: 'host' });
  });
});

describe('a collector that is down or hangs never holds up the session', () => {
  let kit: Kit | undefined;
  let tel: SessionTelemetry | undefined;
  let receiver: OtlpReceiver | undefined;
  afterEach(closeOpened(() => ({ kit, tel, receiver }), { shutdownMs: 200 }));

  async function deadPort(): Promise<number> {
    const s = net.createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const port = (s.address() as net.AddressInfo).port;
    await new Promise<void>((r) => s.close(() => r()));
    return port;
  }

  it('dead endpoint: the task completes, one warning, failures counted, shutdown returns', async () => {
    resetMetrics();
    const warnings: string[] = [];
    kit = await openKit({
      yaml: capsuleYaml({ name: 'dead-col' }),
      artifacts: [driverDef('anthropic'), ECHO_TOOL],
      script: { turns: [{ toolCalls: [{ name: 'echo', input: { text: 'a' } }] }, { text: 'ok' }] },
    });
    tel = instrumentSession(kit.session, {
      setup: {
        endpoint: `http://127.0.0.1:${await deadPort()}`,
        env: {},
        warn: (w) => warnings.push(w),
        batch: { scheduledDelayMillis: 10 },
        exportTimeoutMs: 1000,
      },
    });
    const r = await kit.session.runTask({ taskId: 't', contextId: 'c', text: 'x', source: 'task_md' });
    expect(r.exit).toBe('completed');
    await kit.close();
    kit = undefined;
    await tel.shutdown(3000);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/failed.*the session goes on/);
    const x = parseExposition(await runtimeMetrics().registry.metrics());
    expect(x.get('capsule_otel_spans_exported_total', { result: 'failed' })).toBeGreaterThan(0);
  });

  it('hanging collector: shutdown is bounded by its timeout', async () => {
    receiver = await startOtlpReceiver();
    receiver.delayMs = 30_000;
    kit = await openKit({ yaml: capsuleYaml({ name: 'slow-col' }), artifacts: [driverDef('anthropic'), ECHO_TOOL], script: { turns: [{ text: 'ok' }] } });
    tel = instrumentSession(kit.session, { setup: { endpoint: receiver.url, env: {}, warn: () => {} } });
    const r = await kit.session.runTask({ taskId: 't', contextId: 'c', text: 'x', source: 'task_md' });
    expect(r.exit).toBe('completed');
    await tel.shutdown(300);
    // The export was sent and the collector has not answered it: shutdown did not wait for it.
    expect(receiver.requests.length).toBeGreaterThan(0);
    expect(receiver.answered).toBe(0);
  });
});
