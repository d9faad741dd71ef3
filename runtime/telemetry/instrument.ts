/**
 * Instrumenting a session (spans from its trace events, metrics), without the OpenTelemetry SDK
 * unless spans are exported: `instrument()` loads the SDK first when the manifest or the OTEL_*
 * environment asks for export; `instrumentSession()` is the synchronous core (its caller has the
 * SDK loaded, e.g. through index.ts, or tracing is off).
 */
import type { StagedCapsule } from '../session/stage.ts';
import type { TraceWriter } from '../trace/writer.ts';
import { attachMetrics, runtimeMetrics, type RuntimeMetrics } from './metrics.ts';
import { currentTelemetry, loadTelemetrySdk, setupTelemetry, tracingWanted, TELEMETRY_OFF, type Telemetry, type TelemetryOptions } from './otel.ts';
import { attachSpans, providerFromDriver } from './spans.ts';

export interface InstrumentOptions {
  /**
   * The tracer provider to use. Default: a new one from the manifest's `observability` block and
   * the OTEL_* environment (`setupTelemetry`), made process-wide; `false`: no spans at all.
   */
  telemetry?: Telemetry | false;
  /** Extra options for the default setupTelemetry (env, exporter, batch, warn…). */
  setup?: Partial<TelemetryOptions>;
  /** Metrics registry; default the process-wide one /metrics serves. `false`: no metrics. */
  metrics?: RuntimeMetrics | false;
}

/** What instrumentSession needs of a session: an agent session (CapsuleSession) or a script capsule's (ScriptSession). */
export interface InstrumentableSession {
  readonly staged: StagedCapsule;
  readonly trace: TraceWriter;
  /** An agent session's spend meter (a script capsule has none): served as the spend gauges. */
  readonly spend?: { readonly spent: number; readonly limit: number | undefined };
}

export interface SessionTelemetry {
  readonly telemetry: Telemetry;
  /** Detaches from the session and flushes + stops the tracer provider it created (bounded). */
  shutdown(timeoutMs?: number): Promise<void>;
}

/**
 * Instruments an opened session: spans for its tasks, turns, tool calls, hook dispatches; metrics
 * from its trace events. Never throws on a telemetry problem: a bad collector only costs spans.
 */
export function instrumentSession(session: InstrumentableSession, o: InstrumentOptions = {}): SessionTelemetry {
  // Twice on one session would count every event twice: the first instrumentation stands.
  const already = instrumented.get(session);
  if (already) return already;
  const m = session.staged.manifest;
  const provider = providerFromDriver(session.staged.driver?.name ?? m.inference?.driver.artifact);
  let owned = false;
  let telemetry: Telemetry;
  if (o.telemetry === false) telemetry = TELEMETRY_OFF;
  else if (o.telemetry) telemetry = o.telemetry;
  else {
    try {
      telemetry = setupTelemetry({
        serviceName: m.name,
        serviceVersion: m.version,
        ...(m.observability.otelEndpoint ? { endpoint: m.observability.otelEndpoint } : {}),
        headers: m.observability.otelHeaders,
        ...(o.setup ?? {}),
        onExport: (spans, ok) => {
          if (o.metrics !== false) (o.metrics ?? runtimeMetrics()).spansExported.inc({ result: ok ? 'ok' : 'failed' }, spans);
          o.setup?.onExport?.(spans, ok);
        },
      });
      owned = telemetry !== TELEMETRY_OFF;
    } catch (e) {
      process.stderr.write(`telemetry: tracing disabled: ${(e as Error).message} [E-OBS-003]\n`);
      telemetry = currentTelemetry();
    }
  }
  const detachSpans = attachSpans(session.trace, { capsule: m.name, version: m.version, model: m.inference?.model, provider, telemetry });
  // Label values: the capsule's own tools (artifacts, pulled ones included: the list is read when an
  // event comes), its shell allowlist, the runtime's delegate-task, and its MCP servers' tools.
  const shellAllow = new Set(m.capabilities.shell?.allow ?? []);
  // MCP tools (mcp__<server>__<tool>) of declared servers: only admitted tools run (at most 64 a
  // server), a name the model invents is an unknown tool.
  const mcpPrefixes = (m.mcp?.servers ?? []).map((s) => `mcp__${s.name}__`);
  const knownTool = (name: string): boolean =>
    name === 'delegate-task' || shellAllow.has(name) || session.staged.artifacts.some((a) => a.name === name) || mcpPrefixes.some((p) => name.startsWith(p));
  const knownBinary = (name: string): boolean => shellAllow.has(name);
  const metrics = o.metrics === false ? undefined : (o.metrics ?? runtimeMetrics());
  const detachTrace = metrics
    ? attachMetrics(session.trace, { capsule: m.name, version: m.version, model: m.inference?.model, provider, knownTool, knownBinary }, metrics)
    : () => {};
  const spend = session.spend;
  const unwatchSpend = metrics && spend ? metrics.watchSpend(m.name, () => ({ spent: spend.spent, limit: spend.limit })) : () => {};
  const detachMetrics = (): void => {
    detachTrace();
    unwatchSpend();
  };
  let done: Promise<void> | undefined;
  const handle: SessionTelemetry = {
    telemetry,
    shutdown(timeoutMs?: number) {
      done ??= (async () => {
        instrumented.delete(session);
        detachSpans();
        detachMetrics();
        if (owned) await telemetry.shutdown(timeoutMs);
      })();
      return done;
    },
  };
  instrumented.set(session, handle);
  return handle;
}

const instrumented = new WeakMap<InstrumentableSession, SessionTelemetry>();

/** instrumentSession, after loading the OpenTelemetry SDK if this session's spans are exported. */
export async function instrument(session: InstrumentableSession, o: InstrumentOptions = {}): Promise<SessionTelemetry> {
  const m = session.staged.manifest;
  if (o.telemetry === undefined && tracingWanted({ ...(m.observability.otelEndpoint ? { endpoint: m.observability.otelEndpoint } : {}), ...(o.setup ?? {}) })) {
    await loadTelemetrySdk();
  }
  return instrumentSession(session, o);
}
