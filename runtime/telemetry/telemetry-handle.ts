/**
 * The telemetry handle both sides of setupTelemetry share: the options and `Telemetry` types,
 * `TELEMETRY_OFF`, the process-wide current telemetry, and the slot the SDK side (otel-sdk.ts)
 * registers its builder into when it loads. A leaf needing only the OpenTelemetry API, so that
 * otel.ts (which loads otel-sdk.ts) and otel-sdk.ts both import it and not each other.
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

/** Back to TELEMETRY_OFF when `tracer` is the current telemetry's (its provider has stopped). */
export function clearCurrentTelemetry(tracer: Tracer): void {
  if (current.tracer === tracer) current = TELEMETRY_OFF;
}

export interface ResolvedEndpoint {
  url: string;
  headers: Record<string, string>;
  protocol: OtlpProtocol;
  /** Set when the requested protocol was not usable. */
  warning?: string;
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

/** The SDK side's builder, once otel-sdk.ts is loaded. */
export function registeredTelemetrySdk(): ((o: TelemetryOptions, resolved: ResolvedEndpoint | undefined) => Telemetry) | undefined {
  return sdk;
}
