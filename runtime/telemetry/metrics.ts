/**
 * Prometheus metrics of a capsule runtime, on prom-client with the runtime's own Registry (never
 * the global one). Fed by `attachMetrics(trace, labels)`, which subscribes to the session's trace
 * events: the metrics count exactly what `trace.jsonl` records.
 *
 * Naming (protocols.md §4): base units, `_total` on counters, bounded labels only — capsule, model,
 * tool, binary (basename), hook, arm, state. Never task, context, message or trace ids. The two
 * GenAI metrics use the names the OTel → Prometheus translation gives the semantic-convention
 * instruments (`gen_ai_client_token_usage`, `gen_ai_client_operation_duration_seconds`), with the
 * semconv bucket boundaries, so dashboards written for OTel exporters keep working.
 */
import { basename } from 'node:path';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from './prom-client-parts.ts';
import type { TraceEvent, TraceWriter } from '../trace/writer.ts';
import { normaliseUsage } from './usage.ts';

/** gen_ai.client.token.usage advice: 1, 4, 16, … 67108864 (powers of 4). */
export const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
/** gen_ai.client.operation.duration advice: 0.01 s doubling to 81.92 s. */
export const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
/** Whole tasks run longer: 0.1 s to ~27 min. */
export const TASK_DURATION_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 1600];

/** Label values for tool names the model invented (an unknown tool is not a bounded value). */
export const UNKNOWN_TOOL = 'unknown';

export class RuntimeMetrics {
  readonly registry = new Registry();

  readonly tokens = new Counter({
    name: 'capsule_tokens_total',
    help: "Tokens used by inference, by capsule, model and token type (input includes cached input; cache_read and cache_write are subsets of it). source: provider when the driver reported the number, host when it is the runtime's own count.",
    labelNames: ['capsule', 'model', 'token_type', 'source'] as const,
    registers: [this.registry],
  });

  readonly tokenUsage = new Histogram({
    name: 'gen_ai_client_token_usage',
    help: 'Tokens per inference call (OTel gen_ai.client.token.usage), by token type input or output.',
    labelNames: ['capsule', 'gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model', 'gen_ai_token_type'] as const,
    buckets: TOKEN_BUCKETS,
    registers: [this.registry],
  });

  readonly inferenceDuration = new Histogram({
    name: 'gen_ai_client_operation_duration_seconds',
    help: 'Duration of inference calls through the driver, in seconds (OTel gen_ai.client.operation.duration). error_type is set on failed calls only.',
    labelNames: ['capsule', 'gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model', 'error_type'] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly toolCalls = new Counter({
    name: 'capsule_tool_calls_total',
    help: 'Tool calls by tool and status (ok, error, denied). Tools the model named but the capsule does not have count as tool="unknown".',
    labelNames: ['capsule', 'tool', 'status'] as const,
    registers: [this.registry],
  });

  readonly toolCallDuration = new Histogram({
    name: 'capsule_tool_call_duration_seconds',
    help: 'Duration of tool calls in seconds (the tool_call trace event), by tool and status, bounded like capsule_tool_calls_total.',
    labelNames: ['capsule', 'tool', 'status'] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly hookCallDuration = new Histogram({
    name: 'capsule_hook_call_duration_seconds',
    help: 'Duration of each call into a hook component in seconds (the hook_call trace event), by hook and handler.',
    labelNames: ['capsule', 'hook', 'handler'] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly shellCalls = new Counter({
    name: 'capsule_shell_calls_total',
    help: 'Shell commands by binary (basename) and outcome (ok: exit 0, nonzero_exit, denied).',
    labelNames: ['capsule', 'binary', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly denied = new Counter({
    name: 'capsule_calls_denied_total',
    help: 'Tool and shell calls a policy hook refused, by hook and kind (tool, shell).',
    labelNames: ['capsule', 'hook', 'kind'] as const,
    registers: [this.registry],
  });

  readonly mcpCalls = new Counter({
    name: 'capsule_mcp_calls_total',
    help: "MCP tool calls (mcp_call) by server, tool (the server's name for it), status (ok, error) and error code (E-MCP-*, empty when ok). Only admitted tools of declared servers are called, so the values are bounded.",
    labelNames: ['capsule', 'server', 'tool', 'status', 'code'] as const,
    registers: [this.registry],
  });

  readonly networkDenied = new Counter({
    name: 'capsule_network_denied_total',
    help: 'Outgoing requests a component made that its network grant refused (network_denied), by component kind and name. The destination is in the trace, not a label: guests choose it.',
    labelNames: ['capsule', 'component_kind', 'component'] as const,
    registers: [this.registry],
  });

  readonly hookFaults = new Counter({
    name: 'capsule_hook_faults_total',
    help: 'Hook dispatch faults (hook_dispatch_error), by hook and arm (the unhonored arm, or error, timeout, queue-overflow).',
    labelNames: ['capsule', 'hook', 'arm'] as const,
    registers: [this.registry],
  });

  readonly tasks = new Counter({
    name: 'capsule_tasks_total',
    help: 'Finished tasks by final state (ok, failed, max_turns_reached, spend_ceiling_reached, canceled).',
    labelNames: ['capsule', 'state'] as const,
    registers: [this.registry],
  });

  readonly taskDuration = new Histogram({
    name: 'capsule_task_duration_seconds',
    help: 'Task duration in seconds, by final state.',
    labelNames: ['capsule', 'state'] as const,
    buckets: TASK_DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly activeTasks = new Gauge({
    name: 'capsule_active_tasks',
    help: 'Tasks running now.',
    labelNames: ['capsule'] as const,
    registers: [this.registry],
  });

  /** Where each served capsule's waiting-for-input count comes from (read at scrape time). */
  readonly #waitingSources = new Map<string, () => number>();

  readonly waitingForInput: Gauge<'capsule'> = new Gauge({
    name: 'capsule_tasks_waiting_for_input',
    help: 'Tasks blocked in input-required, waiting for a caller to answer (lifecycle.input_timeout_secs bounds the wait).',
    labelNames: ['capsule'] as const,
    registers: [this.registry],
    collect: () => {
      for (const [capsule, f] of this.#waitingSources) this.waitingForInput.set({ capsule }, f());
    },
  });

  /** Serves `capsule_tasks_waiting_for_input` for `capsule` from `count` (mur serve's task machine). */
  watchWaitingForInput(capsule: string, count: () => number): void {
    this.#waitingSources.set(capsule, count);
  }

  /** Where each served capsule's idle clock is read (at scrape time): mur serve's activity tracker. */
  readonly #idleSources = new Map<string, IdleClock>();

  readonly idleSeconds: Gauge<'capsule'> = new Gauge({
    name: 'capsule_idle_seconds',
    help: 'Seconds since the capsule last did anything: 0 while a task is submitted, working or waiting for input, or an A2A request or stream (any binding) is open. The operator puts a sleep-enabled Capsule to sleep by it.',
    labelNames: ['capsule'] as const,
    registers: [this.registry],
    collect: () => {
      for (const [capsule, c] of this.#idleSources) this.idleSeconds.set({ capsule }, c.idleSeconds());
    },
  });

  readonly idleSince: Gauge<'capsule'> = new Gauge({
    name: 'capsule_idle_since_timestamp_seconds',
    help: 'Unix time the current idle period began (see capsule_idle_seconds); 0 while busy.',
    labelNames: ['capsule'] as const,
    registers: [this.registry],
    collect: () => {
      for (const [capsule, c] of this.#idleSources) this.idleSince.set({ capsule }, c.idleSinceSeconds());
    },
  });

  /** Serves the idle gauges of `capsule` from `clock` (runtime/telemetry/activity.ts). */
  watchIdle(capsule: string, clock: IdleClock): void {
    this.#idleSources.set(capsule, clock);
  }

  readonly spendRefusals = new Counter({
    name: 'capsule_spend_ceiling_refusals_total',
    help: 'Inference calls refused by inference.max_session_tokens, by origin (agent: the agent loop, hook: a hook run-inference, mcp: an MCP server sampling request).',
    labelNames: ['capsule', 'origin'] as const,
    registers: [this.registry],
  });

  /** Where each served capsule's spend meter is read (at scrape time): its session's ceiling and tokens spent. */
  readonly #spendSources = new Map<string, () => { spent: number; limit: number | undefined }>();

  readonly spendSpent: Gauge<'capsule'> = new Gauge({
    name: 'capsule_spend_session_tokens',
    help: 'Tokens the session has spent against inference.max_session_tokens (input + output of settled inference calls).',
    labelNames: ['capsule'] as const,
    registers: [this.registry],
    collect: () => this.#readSpend(),
  });

  readonly spendCeiling: Gauge<'capsule'> = new Gauge({
    name: 'capsule_spend_ceiling_tokens',
    help: 'The session spend ceiling inference.max_session_tokens; absent for a capsule without one.',
    labelNames: ['capsule'] as const,
    registers: [this.registry],
    collect: () => this.#readSpend(),
  });

  #readSpend(): void {
    for (const [capsule, f] of this.#spendSources) {
      const { spent, limit } = f();
      this.spendSpent.set({ capsule }, spent);
      if (limit !== undefined) this.spendCeiling.set({ capsule }, limit);
    }
  }

  /**
   * Serves the spend gauges of `capsule` from its session's spend meter; returns the undo. The
   * series stay after the undo (a closed session's spend is its last word until the process ends).
   */
  watchSpend(capsule: string, read: () => { spent: number; limit: number | undefined }): () => void {
    this.#spendSources.set(capsule, read);
    return () => {
      if (this.#spendSources.get(capsule) !== read) return;
      this.#readSpend();
      this.#spendSources.delete(capsule);
    };
  }

  readonly info = new Gauge({
    name: 'capsule_info',
    help: 'The capsule this runtime serves (value 1).',
    labelNames: ['capsule', 'version', 'model', 'provider'] as const,
    registers: [this.registry],
  });

  readonly spansExported = new Counter({
    name: 'capsule_otel_spans_exported_total',
    help: 'Spans handed to the OTLP exporter, by result (ok, failed). Failed spans are dropped.',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  private defaults = false;

  /** Process and Node.js metrics (process_*, nodejs_*), once. */
  withDefaultMetrics(): this {
    if (!this.defaults) {
      this.defaults = true;
      collectDefaultMetrics({ register: this.registry });
    }
    return this;
  }
}

let shared: RuntimeMetrics | undefined;

/** The process-wide metrics (what /metrics serves). */
export function runtimeMetrics(): RuntimeMetrics {
  shared ??= new RuntimeMetrics().withDefaultMetrics();
  return shared;
}

/** Zeroes every metric of the process-wide registry (tests). */
export function resetMetrics(): void {
  runtimeMetrics().registry.resetMetrics();
}

/** What the idle gauges read at scrape time (ActivityTracker, activity.ts). */
export interface IdleClock {
  idleSeconds(): number;
  idleSinceSeconds(): number;
}

export interface MetricLabels {
  capsule: string;
  version?: string;
  /** The capsule's model (for capsule_info). */
  model?: string;
  /** gen_ai.provider.name, from the driver artifact (see providerFromDriver). */
  provider: string;
  /**
   * Whether a tool name / shell binary is one the capsule declares. Label values are kept to those
   * (others count as `unknown`): a model or a script capsule's guest chooses the names it calls,
   * and every distinct label value is a new time series. Absent: every name is taken as is.
   */
  knownTool?: (name: string) => boolean;
  knownBinary?: (name: string) => boolean;
}

/**
 * Subscribes the metrics to a session's trace events. Returns the detach function, which also
 * takes back the session's still-active tasks from capsule_active_tasks.
 */
export function attachMetrics(trace: TraceWriter, labels: MetricLabels, m: RuntimeMetrics = runtimeMetrics()): () => void {
  const capsule = labels.capsule;
  const toolLabel = (v: unknown): string => {
    const name = str(v);
    return name !== undefined && (labels.knownTool?.(name) ?? true) ? name : UNKNOWN_TOOL;
  };
  const binLabel = (v: unknown): string => {
    const b = binaryLabel(v);
    return (labels.knownBinary?.(b) ?? true) ? b : 'unknown';
  };
  let active = 0;
  m.info.set({ capsule, version: labels.version ?? '', model: labels.model ?? '', provider: labels.provider }, 1);
  const settle = (): void => {
    if (active > 0) m.activeTasks.dec({ capsule }, active);
    active = 0;
  };
  const off = trace.onEvent((e: TraceEvent) => {
    switch (e.event_type) {
      case 'task_start':
        active++;
        m.activeTasks.inc({ capsule });
        return;
      case 'task_end': {
        if (active > 0) {
          active--;
          m.activeTasks.dec({ capsule });
        }
        const state = str(e.exit_status) ?? 'unknown';
        m.tasks.inc({ capsule, state });
        const ms = num(e.duration_ms);
        if (ms !== undefined) m.taskDuration.observe({ capsule, state }, ms / 1000);
        return;
      }
      case 'inference':
        onInference(m, capsule, labels.provider, e);
        return;
      case 'tool_call': {
        const status = str(e.status) ?? 'unknown';
        const tool = e.error === 'unknown tool' ? UNKNOWN_TOOL : toolLabel(e.tool_name);
        m.toolCalls.inc({ capsule, tool, status });
        const ms = num(e.duration_ms);
        if (ms !== undefined) m.toolCallDuration.observe({ capsule, tool, status }, ms / 1000);
        return;
      }
      case 'hook_call': {
        const ms = num(e.duration_ms);
        // Hook names come from the manifest and handlers from the WIT world: both bounded.
        if (ms !== undefined) m.hookCallDuration.observe({ capsule, hook: str(e.hook_name) ?? 'unknown', handler: str(e.event) ?? 'unknown' }, ms / 1000);
        return;
      }
      case 'shell': {
        const code = num(e.exit_code);
        // A refusal (not allowlisted) or a binary that could not be started ran nothing.
        const outcome = e.refused === true ? 'denied' : code === undefined && e.error !== undefined ? 'error' : code === 0 ? 'ok' : 'nonzero_exit';
        m.shellCalls.inc({ capsule, binary: binLabel(e.binary), outcome });
        return;
      }
      case 'call_denied': {
        const hook = str(e.hook) ?? 'unknown';
        const kind = str(e.kind) ?? (e.binary !== undefined ? 'shell' : 'tool');
        m.denied.inc({ capsule, hook, kind });
        if (kind === 'shell') m.shellCalls.inc({ capsule, binary: binLabel(e.binary), outcome: 'denied' });
        else m.toolCalls.inc({ capsule, tool: toolLabel(e.tool_name), status: 'denied' });
        return;
      }
      case 'mcp_call':
        m.mcpCalls.inc({
          capsule,
          server: str(e.server) ?? 'unknown',
          tool: str(e.tool) ?? 'unknown',
          status: str(e.status) ?? 'unknown',
          code: str(e.code) ?? '',
        });
        return;
      case 'network_denied':
        m.networkDenied.inc({ capsule, component_kind: str(e.component_kind) ?? 'unknown', component: str(e.component) ?? 'unknown' });
        return;
      case 'hook_dispatch_error':
        m.hookFaults.inc({ capsule, hook: str(e.hook_name) ?? 'unknown', arm: str(e.arm) ?? 'unknown' });
        return;
      case 'spend_ceiling_reached':
        m.spendRefusals.inc({ capsule, origin: refusalOrigin(str(e.origin)) });
        return;
      case 'session_end':
        settle();
        return;
      default:
    }
  });
  return () => {
    off();
    settle();
  };
}

function onInference(m: RuntimeMetrics, capsule: string, provider: string, e: TraceEvent): void {
  const model = str(e.model) ?? 'unknown';
  const seconds = (num(e.duration_ms) ?? 0) / 1000;
  const op = { capsule, gen_ai_operation_name: 'chat', gen_ai_provider_name: provider, gen_ai_request_model: model };
  if (e.decision === 'error') {
    // The request may never have reached the provider: no tokens are counted (the spend meter
    // drops the ticket too), only the failed call's duration.
    m.inferenceDuration.observe({ ...op, error_type: 'driver_error' }, seconds);
    return;
  }
  m.inferenceDuration.observe(op, seconds);
  const u = normaliseUsage(e, provider);
  m.tokens.inc({ capsule, model, token_type: 'input', source: u.inputSource }, u.input);
  m.tokens.inc({ capsule, model, token_type: 'output', source: u.outputSource }, u.output);
  if (u.cacheRead !== undefined) m.tokens.inc({ capsule, model, token_type: 'cache_read', source: 'provider' }, u.cacheRead);
  if (u.cacheWrite !== undefined) m.tokens.inc({ capsule, model, token_type: 'cache_write', source: 'provider' }, u.cacheWrite);
  m.tokenUsage.observe({ ...op, gen_ai_token_type: 'input' }, u.input);
  m.tokenUsage.observe({ ...op, gen_ai_token_type: 'output' }, u.output);
}

function binaryLabel(v: unknown): string {
  const s = str(v);
  return s ? basename(s) : 'unknown';
}

/**
 * A refused call's trace `origin` as a bounded label: `hook:<name>` and `mcp:<server>` name a
 * hook or server (unbounded), so only their kind is kept; the agent loop writes no origin.
 */
function refusalOrigin(origin: string | undefined): 'agent' | 'hook' | 'mcp' {
  if (origin?.startsWith('hook:')) return 'hook';
  if (origin?.startsWith('mcp:')) return 'mcp';
  return 'agent';
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
