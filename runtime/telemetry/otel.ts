/**
 * OpenTelemetry trace export for a capsule runtime.
 *
 * `setupTelemetry()` builds one tracer provider with the SDK's BatchSpanProcessor in front of an
 * OTLP/HTTP exporter (protobuf by default, JSON when `http/json` is asked for). Spans are queued in
 * memory and exported from a timer, off the agent loop: a slow or dead collector costs dropped
 * spans (queue bounded at `maxQueueSize`), never a slower or failed session. Export failures are
 * counted and reported once, never thrown.
 *
 * Where the endpoint comes from, first match wins:
 *   1. `endpoint` (the manifest's `observability.otel_endpoint`, a base URL: `/v1/traces` is
 *      appended unless the path already ends in it), with `headers` (`observability.otel_headers`);
 *   2. `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is);
 *   3. `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL, `/v1/traces` appended).
 * None of them (or `OTEL_SDK_DISABLED=true`, or `OTEL_TRACES_EXPORTER=none`): tracing is off and the
 * returned handle's tracer is the API's no-op tracer, whose spans cost a few allocations.
 * Headers from the env: `OTEL_EXPORTER_OTLP_HEADERS` / `OTEL_EXPORTER_OTLP_TRACES_HEADERS`
 * (`k=v,k2=v2`, values URL-decoded). Protocol: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` /
 * `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf` default, `http/json`; `grpc` is not supported and
 * falls back to `http/protobuf` with a warning). Batch tuning: the SDK's `OTEL_BSP_*` variables.
 *
 * This module needs only the OpenTelemetry API; the SDK side (provider, processor, exporters) is
 * otel-sdk.ts, loaded only when spans are exported (see `registerTelemetrySdk`).
 */
import { trace, type Tracer } from '@opentelemetry/api';
import type { BufferConfig, SpanExporter } from '@opentelemetry/sdk-trace-base';

export const INSTRUMENTATION_SCOPE = 'capsule-runtime';
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 5_000;

export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface TelemetryOptions {
  /** `service.name`: the capsule name. */
  serviceName: string;
  /** `service.version`: the capsule version. */
  serviceVersion: string;
  /** The manifest's `observability.otel_endpoint` (base URL). */
  endpoint?: string;
  /** The manifest's `observability.otel_headers`. */
  headers?: Record<string, string>;
  /** Default `process.env`: the OTEL_* and POD_NAME / POD_NAMESPACE variables are read from it. */
  env?: NodeJS.ProcessEnv;
  protocol?: OtlpProtocol;
  /**
   * Export to this exporter instead of OTLP (tests: an `InMemorySpanExporter`). Tracing is then on
   * whatever the endpoint settings say.
   */
  exporter?: SpanExporter;
  /** Export each span as it ends (tests only; the default batches). */
  simple?: boolean;
  /** BatchSpanProcessor settings; default: the SDK's (OTEL_BSP_* env, else 512 / 5 s / 2048 / 30 s). */
  batch?: BufferConfig;
  /** Per-request exporter timeout; default 10 s. */
  exportTimeoutMs?: number;
  /** Extra resource attributes. */
  resource?: Record<string, string>;
  /** Where the one-time "export failing" warning goes; default stderr. */
  warn?: (message: string) => void;
  /** Called after each export attempt (metrics hang off this). */
  onExport?: (spans: number, ok: boolean) => void;
}

export interface Telemetry {
  /** True when spans are recorded and exported. */
  readonly enabled: boolean;
  /** The resolved OTLP traces URL, when exporting over OTLP. */
  readonly url?: string;
  readonly protocol?: OtlpProtocol;
  readonly tracer: Tracer;
  /** Exports what is queued; bounded by `timeoutMs`. Never throws. */
  flush(timeoutMs?: number): Promise<void>;
  /** Flushes, then stops the provider; bounded by `timeoutMs` (default 5 s). Never throws. */
  shutdown(timeoutMs?: number): Promise<void>;
}

const NOOP_TRACER: Tracer = trace.getTracer(INSTRUMENTATION_SCOPE);

/** Tracing off: the API's no-op tracer, nothing to flush. */
export const TELEMETRY_OFF: Telemetry = {
  enabled: false,
  tracer: NOOP_TRACER,
  flush: async () => {},
  shutdown: async () => {},
};

let current: Telemetry = TELEMETRY_OFF;

/** The process-wide telemetry (the last `setupTelemetry()` that was made current; else off). */
export function currentTelemetry(): Telemetry {
  return current;
}

/** Makes `t` the process-wide telemetry (setupTelemetry does this unless told `current: false`). */
export function setCurrentTelemetry(t: Telemetry): void {
  current = t;
}

export interface ResolvedEndpoint {
  url: string;
  headers: Record<string, string>;
  protocol: OtlpProtocol;
  /** Set when the requested protocol was not usable. */
  warning?: string;
}

/** Where spans go, or undefined when tracing is off. Exported for tests and `mur` diagnostics. */
export function resolveEndpoint(o: Pick<TelemetryOptions, 'endpoint' | 'headers' | 'env' | 'protocol'>): ResolvedEndpoint | undefined {
  const env = o.env ?? process.env;
  if (isTrue(env.OTEL_SDK_DISABLED)) return undefined;
  if ((env.OTEL_TRACES_EXPORTER ?? '').split(',').map((s) => s.trim()).includes('none')) return undefined;
  let url: string | undefined;
  let headers: Record<string, string> = {};
  if (o.endpoint && o.endpoint.trim() !== '') {
    url = signalUrl(o.endpoint.trim());
    headers = { ...(o.headers ?? {}) };
  } else if (nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)) {
    url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT!.trim();
  } else if (nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT)) {
    url = signalUrl(env.OTEL_EXPORTER_OTLP_ENDPOINT!.trim());
  }
  if (url === undefined) return undefined;
  if (!(o.endpoint && o.endpoint.trim() !== '')) {
    headers = { ...parseHeaderList(env.OTEL_EXPORTER_OTLP_HEADERS), ...parseHeaderList(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) };
  }
  const asked = o.protocol ?? (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim();
  let protocol: OtlpProtocol = 'http/protobuf';
  let warning: string | undefined;
  if (asked === 'http/json') protocol = 'http/json';
  else if (asked !== 'http/protobuf') warning = `OTLP protocol '${asked}' is not supported by the capsule runtime; exporting with http/protobuf to ${url} [E-OBS-002]`;
  return { url, headers, protocol, ...(warning ? { warning } : {}) };
}

/** `http://collector:4318` → `http://collector:4318/v1/traces` (a path already ending in it is kept). */
export function signalUrl(base: string): string {
  const b = base.replace(/\/+$/, '');
  return b.endsWith('/v1/traces') ? b : `${b}/v1/traces`;
}

/** `k=v,k2=v2` (W3C baggage-like, values URL-encoded) → record; malformed members are skipped. */
export function parseHeaderList(s: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!s) return out;
  for (const part of s.split(',')) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    const k = part.slice(0, i).trim();
    let v = part.slice(i + 1).trim();
    try {
      v = decodeURIComponent(v);
    } catch {
      // keep the raw value
    }
    if (k) out[k] = v;
  }
  return out;
}

/** The resource: service name/version, plus Kubernetes pod and namespace when the env names them. */
export function resourceAttributes(o: Pick<TelemetryOptions, 'serviceName' | 'serviceVersion' | 'env' | 'resource'>): Record<string, string> {
  const env = o.env ?? process.env;
  const attrs: Record<string, string> = { 'service.name': o.serviceName, 'service.version': o.serviceVersion };
  if (nonEmpty(env.POD_NAME)) attrs['k8s.pod.name'] = env.POD_NAME!;
  if (nonEmpty(env.POD_NAMESPACE)) attrs['k8s.namespace.name'] = env.POD_NAMESPACE!;
  if (nonEmpty(env.NODE_NAME)) attrs['k8s.node.name'] = env.NODE_NAME!;
  return { ...attrs, ...(o.resource ?? {}) };
}

/**
 * The SDK side of setupTelemetry (otel-sdk.ts: the tracer provider, batch processor and OTLP
 * exporters), registered when that module is loaded. Kept out of this module so that a runtime
 * with tracing off never loads the OpenTelemetry SDK and its exporters (≈ 1 MB of bundled code
 * evaluated at every `mur serve` start otherwise): `instrument()` loads it only when spans would
 * be exported; the telemetry barrel (index.ts) loads it for every other user.
 */
let sdk: ((o: TelemetryOptions, resolved: ResolvedEndpoint | undefined) => Telemetry) | undefined;

/** Called by otel-sdk.ts when it loads. */
export function registerTelemetrySdk(build: (o: TelemetryOptions, resolved: ResolvedEndpoint | undefined) => Telemetry): void {
  sdk = build;
}

/** Loads the OpenTelemetry SDK side (idempotent). */
export async function loadTelemetrySdk(): Promise<void> {
  if (!sdk) await import('./otel-sdk.ts');
}

/** Whether setupTelemetry with these options would record spans (and so needs the SDK). */
export function tracingWanted(o: Pick<TelemetryOptions, 'endpoint' | 'headers' | 'env' | 'protocol' | 'exporter'>): boolean {
  return o.exporter !== undefined || resolveEndpoint(o) !== undefined;
}

/** Builds the tracer provider and (unless `current: false`) makes it the process-wide telemetry. */
export function setupTelemetry(o: TelemetryOptions & { current?: boolean }): Telemetry {
  const resolved = o.exporter ? undefined : resolveEndpoint(o);
  let t: Telemetry = TELEMETRY_OFF;
  if (o.exporter || resolved) {
    if (!sdk) throw new Error('the OpenTelemetry SDK is not loaded (await loadTelemetrySdk() first, or import runtime/telemetry/index.ts)');
    t = sdk(o, resolved);
  }
  if (o.current !== false) current = t;
  return t;
}

/** Back to TELEMETRY_OFF when `tracer` is the current telemetry's (its provider has stopped). */
export function clearCurrentTelemetry(tracer: Tracer): void {
  if (current.tracer === tracer) current = TELEMETRY_OFF;
}

function nonEmpty(s: string | undefined): boolean {
  return s !== undefined && s.trim() !== '';
}

function isTrue(s: string | undefined): boolean {
  return (s ?? '').trim().toLowerCase() === 'true';
}
