/**
 * Observability of a capsule session: OTLP traces (GenAI semantic conventions) and Prometheus
 * metrics. The CLI makes one call after opening the session and one after closing it:
 *
 *   const session = await openSession(staged);
 *   const telemetry = await instrument(session);   // instrument.ts
 *   …
 *   await session.close(exitStatus);
 *   await telemetry.shutdown();      // flushes queued spans, bounded (5 s default)
 *
 * See docs/observability.md.
 */
export * from './otel.ts';
export * from './otel-sdk.ts';
export * from './spans.ts';
export * from './metrics.ts';
export * from './instrument.ts';
export { renderMetrics } from './metrics-endpoint.ts';
export { tracedHookPort } from './hooks.ts';
