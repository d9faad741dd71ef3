/**
 * The OpenTelemetry SDK side of `setupTelemetry()` (otel.ts): one BasicTracerProvider with the
 * SDK's BatchSpanProcessor in front of an OTLP/HTTP exporter (protobuf by default, JSON when
 * `http/json` is asked for). Loading this module registers it in telemetry-handle.ts; it is loaded only where
 * spans are exported (instrument.ts) or by the telemetry barrel (index.ts), never by a runtime
 * whose tracing is off.
 */
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter as OTLPJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import {
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  INSTRUMENTATION_SCOPE,
  TELEMETRY_OFF,
  clearCurrentTelemetry,
  registerTelemetrySdk,
  type ResolvedEndpoint,
  type Telemetry,
  type TelemetryOptions,
} from './telemetry-handle.ts';
import { holdsSecrets, redact, redactDeep } from '../secrets.ts';

export { InMemorySpanExporter, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';

function buildTelemetry(o: TelemetryOptions, resolved: ResolvedEndpoint | undefined): Telemetry {
  const warn = o.warn ?? ((m: string) => process.stderr.write(`telemetry: ${m}\n`));
  if (resolved?.warning) warn(resolved.warning);
  const timeoutMillis = o.exportTimeoutMs ?? 10_000;
  let inner: SpanExporter;
  try {
    inner =
      o.exporter ??
      (resolved!.protocol === 'http/json'
        ? new OTLPJsonExporter({ url: resolved!.url, headers: resolved!.headers, timeoutMillis })
        : new OTLPProtoExporter({ url: resolved!.url, headers: resolved!.headers, timeoutMillis }));
  } catch (e) {
    // A malformed endpoint (from the environment: the manifest's is validated) turns tracing off.
    warn(`tracing disabled: ${(e as Error).message} [E-OBS-003]`);
    return TELEMETRY_OFF;
  }
  const exporter = new GuardedExporter(inner, warn, o.onExport, resolved?.url ?? 'the span exporter');
  const processor: SpanProcessor = new RedactingProcessor(o.simple ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter, o.batch));
  const provider = new BasicTracerProvider({ resource: resourceFromAttributes(resourceAttributes(o)), spanProcessors: [processor] });
  const tracer = provider.getTracer(INSTRUMENTATION_SCOPE);
  let stopped: Promise<void> | undefined;
  return {
    enabled: true,
    ...(resolved ? { url: resolved.url, protocol: resolved.protocol } : {}),
    tracer,
    flush: (timeoutMs = DEFAULT_SHUTDOWN_TIMEOUT_MS) => bounded(provider.forceFlush(), timeoutMs),
    shutdown: (timeoutMs = DEFAULT_SHUTDOWN_TIMEOUT_MS) => {
      stopped ??= bounded(provider.shutdown(), timeoutMs).then(() => clearCurrentTelemetry(tracer));
      return stopped;
    },
  };
}

registerTelemetrySdk(buildTelemetry);

/** Never lets an export failure escape; warns once per failure streak; reports every attempt. */
class GuardedExporter implements SpanExporter {
  private failing = false;
  constructor(
    private readonly inner: SpanExporter,
    private readonly warn: (m: string) => void,
    private readonly onExport: ((spans: number, ok: boolean) => void) | undefined,
    private readonly where: string,
  ) {}

  export(spans: ReadableSpan[], done: (r: ExportResult) => void): void {
    const finish = (r: ExportResult): void => {
      const ok = r.code === ExportResultCode.SUCCESS;
      try {
        this.onExport?.(spans.length, ok);
      } catch {
        // metrics must not break export
      }
      if (!ok && !this.failing) {
        this.failing = true;
        this.warn(
          `exporting ${spans.length} span(s) to ${this.where} failed (${r.error?.message ?? 'unknown error'}); spans are dropped until it recovers, the session goes on [E-OBS-001]`,
        );
      } else if (ok && this.failing) {
        this.failing = false;
        this.warn(`exporting to ${this.where} recovered`);
      }
      done(r);
    };
    try {
      this.inner.export(spans, finish);
    } catch (e) {
      finish({ code: ExportResultCode.FAILED, error: e as Error });
    }
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown().catch(() => {});
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.().catch(() => {}) ?? Promise.resolve();
  }
}

/**
 * Redacts each span as it ends, before the batch holds it (runtime/secrets.ts): a secret held only
 * while it is used (a push webhook's token) is still known then, not at the export seconds later.
 */
class RedactingProcessor implements SpanProcessor {
  constructor(private readonly inner: SpanProcessor) {}
  onStart(...a: Parameters<SpanProcessor['onStart']>): void {
    this.inner.onStart(...a);
  }
  onEnd(span: ReadableSpan): void {
    this.inner.onEnd(holdsSecrets() ? redactedSpan(span) : span);
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

/**
 * The span as exported, with every secret the runtime holds redacted from its name, attributes,
 * events, links and status message (runtime/secrets.ts). A view over the ended span (its methods,
 * resource and scope come through the prototype), so the SDK's own object is left as it was.
 */
function redactedSpan(span: ReadableSpan): ReadableSpan {
  // Events and links are the SDK's plain objects: redactDeep returns the very same one when it holds no secret.
  const name = redact(span.name);
  const attributes = redactDeep(span.attributes);
  const events = redactDeep(span.events);
  const links = redactDeep(span.links);
  const status = span.status.message === undefined ? span.status : { ...span.status, message: redact(span.status.message) };
  const same = name === span.name && attributes === span.attributes && events === span.events && links === span.links && status.message === span.status.message;
  if (same) return span;
  return Object.create(span, {
    name: { value: name },
    attributes: { value: attributes },
    events: { value: events },
    links: { value: links },
    status: { value: status },
  }) as ReadableSpan;
}

async function bounded(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    p.catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      timer.unref?.();
    }),
  ]);
  if (timer) clearTimeout(timer);
}

/** The resource: service name/version, plus Kubernetes pod and namespace when the env names them. */
export function resourceAttributes(o: Pick<TelemetryOptions, 'serviceName' | 'serviceVersion' | 'env' | 'resource'>): Record<string, string> {
  const env = o.env ?? process.env;
  const nonEmpty = (s: string | undefined): boolean => s !== undefined && s.trim() !== '';
  const attrs: Record<string, string> = { 'service.name': o.serviceName, 'service.version': o.serviceVersion };
  if (nonEmpty(env.POD_NAME)) attrs['k8s.pod.name'] = env.POD_NAME!;
  if (nonEmpty(env.POD_NAMESPACE)) attrs['k8s.namespace.name'] = env.POD_NAMESPACE!;
  if (nonEmpty(env.NODE_NAME)) attrs['k8s.node.name'] = env.NODE_NAME!;
  return { ...attrs, ...(o.resource ?? {}) };
}
