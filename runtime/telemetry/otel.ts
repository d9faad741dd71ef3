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
 * otel-sdk.ts, loaded only when spans are exported; the two share the handle in telemetry-handle.ts
 * (the SDK registers its builder there), so neither imports the other back.
 */
import {
  TELEMETRY_OFF,
  registeredTelemetrySdk,
  setCurrentTelemetry,
  type OtlpProtocol,
  type ResolvedEndpoint,
  type Telemetry,
  type TelemetryOptions,
} from './telemetry-handle.ts';

// The handle's types and state are part of this module's surface (spans.ts, instrument.ts, the barrel).
export {
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  INSTRUMENTATION_SCOPE,
  TELEMETRY_OFF,
  clearCurrentTelemetry,
  currentTelemetry,
  setCurrentTelemetry,
  type OtlpProtocol,
  type ResolvedEndpoint,
  type Telemetry,
  type TelemetryOptions,
} from './telemetry-handle.ts';

/** Where spans go, or undefined when tracing is off. Exported for tests and `mur` diagnostics. */
export function resolveEndpoint(o: Pick<TelemetryOptions, 'endpoint' | 'headers' | 'env' | 'protocol'>): ResolvedEndpoint | undefined {
  const env = o.env ?? process.env;
  if (isTrue(env.OTEL_SDK_DISABLED)) return undefined;
  if (
    (env.OTEL_TRACES_EXPORTER ?? '')
      .split(',')
      .map((s) => s.trim())
      .includes('none')
  )
    return undefined;
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
  else if (asked !== 'http/protobuf')
    warning = `OTLP protocol '${asked}' is not supported by the capsule runtime; exporting with http/protobuf to ${url} [E-OBS-002]`;
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

/** Loads the OpenTelemetry SDK side (idempotent). */
export async function loadTelemetrySdk(): Promise<void> {
  if (!registeredTelemetrySdk()) await import('./otel-sdk.ts');
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
    const sdk = registeredTelemetrySdk();
    if (!sdk) throw new Error('the OpenTelemetry SDK is not loaded (await loadTelemetrySdk() first, or import runtime/telemetry/index.ts)');
    t = sdk(o, resolved);
  }
  if (o.current !== false) setCurrentTelemetry(t);
  return t;
}

function nonEmpty(s: string | undefined): boolean {
  return s !== undefined && s.trim() !== '';
}

function isTrue(s: string | undefined): boolean {
  return (s ?? '').trim().toLowerCase() === 'true';
}
