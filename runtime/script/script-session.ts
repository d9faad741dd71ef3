/**
 * Script capsules: a capsule manifest with no `inference:` block runs its capsule component's
 * `murmur:capsule/run` export as the task, instead of an agent loop.
 *
 * Per task: `task.md` (the task text) is written into the capsule component's granted directory
 * (`<workdir>/<filesystem.scope>`, its `/`), any `out/result.txt` left there by an earlier task is
 * removed, and `run` is called in a fresh instance under the capsule's own grant (that one
 * preopen, the env allowlist, the network allowlist, `limits.deadline_seconds` for the whole run,
 * `limits.memory_bytes`). The capsule's answer is the file `out/result.txt` it writes in its
 * granted directory (at most 1 MiB, a regular file; absent = no text). A run that returns is
 * `completed`; a run stopped by its deadline, its memory cap or a trap is `failed` with the fault
 * as the reason, and the session carries on (the next task gets a fresh instance).
 *
 * Trace (`trace.jsonl`): session_start, then per task task_start, tool_call (one per invoke),
 * shell, a2a_send, artifact_installed, task_end, and session_end when the session closes.
 *
 * `mur run` calls runScriptCapsule. Served over A2A, each task goes through scriptTaskExecutor
 * (serve.ts) on a ScriptSession, or runScriptTask (one session per staged capsule, opened on first
 * use; closeScriptSession ends it).
 */
import { lstatSync, mkdirSync, openSync, readSync, closeSync, rmSync, writeFileSync, type Stats } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { MurError, failureInfo, formatTaskFailure, isMurError, type FailureInfo } from '../errors.ts';
import { traceNetworkDenied } from '../trace/network-denied.ts';
import { tracingWanted } from '../telemetry/otel.ts';
import { HostFault } from '../host/errors.ts';
import type { ComponentInstance } from '../host/instance.ts';
import { importSpecFor } from '../host/import-spec.ts';
import { GuestInterrupted, InlineInstance } from '../host/inline.ts';
import { guestEnv, grantsFor, logFileFor } from '../host/grants.ts';
import type { TaskTrust } from '../a2a/core/executor.ts';
import type { StagedCapsule } from '../session/stage.ts';
import { TraceWriter, type TraceEvent } from '../trace/writer.ts';
import { findCapsuleComponent, type CapsuleComponent } from './capsule.ts';
import { openScriptMcp } from './mcp.ts';
import { ScriptHost, type ScriptTaskIo } from './host.ts';
import { prepareInline, type InlineRun } from './inline-run.ts';

export type { ScriptTaskIo } from './host.ts';

export const TASK_FILE = 'task.md';
export const RESULT_FILE = 'out/result.txt';
export const RESULT_MAX_BYTES = 1024 * 1024;

export interface ScriptTask {
  taskId: string;
  contextId: string;
  text: string;
  /** Trust class of the task (stamped on outgoing message/send). Default `untrusted`. */
  trust?: TaskTrust;
  /** Who sent it (`user` or `peer`), for the trace and the task span. */
  origin?: string;
  /** W3C traceparent of the caller's span: the task span nests under it. */
  traceparent?: string;
}

export interface ScriptTaskOutcome {
  exit: 'completed' | 'failed' | 'canceled';
  reason?: string;
  /** Code and fix hint of the failure, when it had one. */
  error?: FailureInfo;
  /** The capsule's `out/result.txt`, when it wrote one. */
  text?: string;
}

export interface RunTaskOptions {
  signal?: AbortSignal;
  /** `task_start.source`. Default `a2a`. */
  source?: 'a2a' | 'task_md';
  /** The A2A task's side channels (chunks, request-input, tool-call artifacts). */
  io?: ScriptTaskIo;
}

export interface ScriptSessionOptions {
  /** Host environment the env allowlist and the shell draw from. Default process.env. */
  hostEnv?: NodeJS.ProcessEnv;
  /** Share a trace writer (e.g. with `mur serve`); default: a new one on the session's trace.jsonl. */
  trace?: TraceWriter;
  /**
   * Run the capsule and its tools on this thread when the capsule allows it (`mur run`, which serves
   * nothing meanwhile: script/inline-run.ts says which capsules); otherwise in component workers.
   */
  inline?: boolean;
}

function faultReason(e: unknown): string {
  if (e instanceof HostFault || isMurError(e)) return `${e.message} [${e.code}]`;
  return e instanceof Error ? e.message : String(e);
}

/** Reads `out/result.txt` in the granted dir: a regular file of at most 1 MiB, or nothing. */
function readResult(dir: string): string | undefined {
  const file = path.join(dir, RESULT_FILE);
  let st: Stats;
  try {
    st = lstatSync(file);
  } catch {
    return undefined;
  }
  if (!st.isFile()) {
    throw new MurError('E-SCRIPT-006', `the capsule's ${RESULT_FILE} is not a regular file (${st.isSymbolicLink() ? 'a symlink' : 'a directory or device'})`, {
      hint: `write the answer as a plain file ${RESULT_FILE} in the capsule's directory`,
      location: { file },
    });
  }
  if (st.size > RESULT_MAX_BYTES) {
    throw new MurError('E-SCRIPT-006', `the capsule's ${RESULT_FILE} is ${st.size} bytes, over the ${RESULT_MAX_BYTES} byte limit`, {
      hint: 'keep the answer short and leave bulk output in other files of the workdir',
      location: { file },
    });
  }
  const buf = Buffer.alloc(st.size);
  const fd = openSync(file, 'r');
  try {
    let n = 0;
    while (n < st.size) {
      const k = readSync(fd, buf, n, st.size - n, n);
      if (k === 0) break;
      n += k;
    }
    return buf.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * One script-capsule session: the capsule component, its host imports and tool instances, and the
 * trace. Tasks run one at a time, in call order.
 */
export class ScriptSession {
  readonly staged: StagedCapsule;
  readonly capsule: CapsuleComponent;
  readonly host: ScriptHost;
  readonly trace: TraceWriter;
  private readonly hostEnv: NodeJS.ProcessEnv;
  private readonly ownsTrace: boolean;
  private readonly startedAt = Date.now();
  /** Set when the capsule runs on this thread (ScriptSessionOptions.inline). */
  private inline: InlineRun | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private tasks = 0;
  private failed = 0;
  private closed = false;

  private constructor(staged: StagedCapsule, capsule: CapsuleComponent, trace: TraceWriter, ownsTrace: boolean, hostEnv: NodeJS.ProcessEnv) {
    this.staged = staged;
    this.capsule = capsule;
    this.trace = trace;
    this.ownsTrace = ownsTrace;
    this.hostEnv = hostEnv;
    this.host = new ScriptHost(staged, capsule, trace, { hostEnv });
  }

  /** Finds and checks the capsule component, then writes `session_start`. */
  static async open(staged: StagedCapsule, opts: ScriptSessionOptions = {}): Promise<ScriptSession> {
    const m = staged.manifest;
    if (m.kind !== 'script') {
      throw new MurError('E-SCRIPT-005', `capsule '${m.name}' is an agent capsule (it has an inference: block), not a script capsule`, {
        hint: 'run it through the agent loop (openSession), or remove the inference: block',
        location: { file: m.file, field: 'inference' },
      });
    }
    const capsule = await findCapsuleComponent(staged);
    const trace = opts.trace ?? new TraceWriter(staged.workdir.trace, staged.sessionId);
    const s = new ScriptSession(staged, capsule, trace, !opts.trace, opts.hostEnv ?? process.env);
    s.host.mcp = await openScriptMcp(staged, s.hostEnv, new Set(s.host.callable().map((x) => x.name)), () => s.host.currentTask);
    s.host.mcp?.attach(trace);
    // Fail fast when the component imports something the runtime does not provide (no worker starts).
    importSpecFor(capsule.component, s.host.imports());
    if (opts.inline) s.inline = await prepareInline(capsule, s.host);
    const g = capsule.grant;
    trace.write('session_start', {
      capsule_name: m.name,
      capsule_version: m.version,
      kind: 'script',
      capsule_component: { origin: capsule.origin, path: capsule.wasmPath, sha256: capsule.sha256 },
      tools_declared: [...s.host.callable().map((a) => a.name), ...(s.host.mcp?.names() ?? [])],
      filesystem_scope: g.filesystem.scope,
      network_allow: g.network.allow,
      shell_allow: g.shell?.allow ?? [],
      env_allow: g.env.allow,
      memory_bytes: g.limits.memoryBytes,
      deadline_seconds: g.limits.deadlineSeconds,
    });
    return s;
  }

  /** Whether the capsule runs on this thread, not in component workers (ScriptSessionOptions.inline). */
  get runsInline(): boolean {
    return this.inline !== undefined;
  }

  /** The capsule component's granted directory (its `/`), where task.md and out/result.txt live. */
  get grantedDir(): string {
    return this.host.grantedDir;
  }

  /** Runs one task; never throws for a failing capsule (the outcome says why). */
  runTask(task: ScriptTask, opts: RunTaskOptions = {}): Promise<ScriptTaskOutcome> {
    const run = this.queue.then(() => this.runNow(task, opts.signal, opts.source ?? 'a2a', opts.io));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async runNow(task: ScriptTask, signal: AbortSignal | undefined, source: 'a2a' | 'task_md', io: ScriptTaskIo | undefined): Promise<ScriptTaskOutcome> {
    if (this.closed) throw new MurError('E-SCRIPT-007', `the script session ${this.staged.sessionId} is closed`, { hint: 'open a new session' });
    const started = Date.now();
    const before = { ...this.host.totals };
    const abort = new AbortController();
    const onAbort = (): void => abort.abort(signal?.reason);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    this.tasks++;
    this.trace.write('task_start', {
      task_id: task.taskId,
      context_id: task.contextId,
      source,
      origin: task.origin ?? 'user',
      trust: task.trust ?? 'untrusted',
      message_bytes: Buffer.byteLength(task.text),
      traceparent_from_caller: task.traceparent,
    });
    let outcome: ScriptTaskOutcome;
    let inst: ComponentInstance | undefined;
    let here: InlineInstance | undefined;
    try {
      const c = this.capsule;
      const wd = this.staged.workdir.dir;
      const grants = grantsFor(c.grant, wd, logFileFor(wd, 'capsule', c.name));
      grants.env = guestEnv(c.grant.env.allow, this.hostEnv);
      const dir = grants.preopen ?? wd;
      writeFileSync(path.join(dir, TASK_FILE), task.text);
      rmSync(path.join(dir, RESULT_FILE), { force: true });
      mkdirSync(path.join(dir, 'out'), { recursive: true });
      this.host.setTask({ taskId: task.taskId, contextId: task.contextId, trust: task.trust ?? 'untrusted', signal: abort.signal, ...(io ? { io } : {}) });
      const opts = {
        grants,
        onNetworkDenied: traceNetworkDenied(
          () => this.trace,
          'capsule',
          c.name,
          () => task.taskId,
        ),
        deadlineMs: c.grant.limits.deadlineSeconds * 1000,
        memoryBytes: c.grant.limits.memoryBytes,
      };
      if (this.inline) {
        // On this thread: the call returns when the capsule has (host/inline.ts).
        here = new InlineInstance(this.inline.capsule, { ...opts, imports: this.inline.capsuleImports() });
        here.call(['run', 'run'], []);
      } else {
        // The worker machinery loads with the first capsule that needs it (not `mur run` of one run inline).
        const { ComponentInstance } = await import('../host/instance.ts');
        inst = new ComponentInstance(c.component, { ...opts, imports: this.host.imports() });
        const call = inst.call(['run', 'run'], []);
        const canceled = new Promise<never>((_, reject) => {
          if (abort.signal.aborted) reject(abort.signal.reason);
          abort.signal.addEventListener('abort', () => reject(abort.signal.reason), { once: true });
        });
        canceled.catch(() => undefined);
        await Promise.race([call, canceled]);
      }
      const text = readResult(dir);
      outcome = { exit: 'completed', ...(text !== undefined ? { text } : {}) };
    } catch (e) {
      if (abort.signal.aborted) {
        outcome = { exit: 'canceled', reason: faultReason(abort.signal.reason ?? 'canceled') };
        await this.host.interruptTools();
      } else if (e instanceof GuestInterrupted) {
        // Ctrl-C while the capsule ran on this thread: what the SIGINT handler's abort says otherwise.
        outcome = { exit: 'canceled', reason: faultReason(e) };
      } else {
        outcome = { exit: 'failed', reason: faultReason(e), ...(failureInfo(e) ? { error: failureInfo(e) } : {}) };
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      // Stops shell commands and peer calls still running for this task.
      if (!abort.signal.aborted) abort.abort(new MurError('E-SCRIPT-008', 'the task ended'));
      this.host.setTask(undefined);
      here?.close();
      await inst?.close();
    }
    if (outcome.exit !== 'completed') this.failed++;
    const t = this.host.totals;
    this.trace.write('task_end', {
      task_id: task.taskId,
      exit_status: outcome.exit === 'completed' ? 'ok' : outcome.exit,
      reason: outcome.reason,
      duration_ms: Date.now() - started,
      tool_calls: t.toolCalls - before.toolCalls,
      shell_calls: t.shellCalls - before.shellCalls,
      a2a_sends: t.a2aSends - before.a2aSends,
      result_bytes: outcome.text !== undefined ? Buffer.byteLength(outcome.text) : undefined,
    });
    return outcome;
  }

  /** Writes `session_end` and stops every instance. Idempotent. */
  async close(exitStatus?: string): Promise<void> {
    if (this.closed) return;
    await this.queue;
    this.closed = true;
    const t = this.host.totals;
    this.trace.write('session_end', {
      tasks: this.tasks,
      total_tool_calls: t.toolCalls,
      total_shell_calls: t.shellCalls,
      total_a2a_sends: t.a2aSends,
      total_pulls: t.pulls,
      duration_ms: Date.now() - this.startedAt,
      exit_status: exitStatus ?? (this.failed > 0 ? 'failed' : 'ok'),
    });
    await this.host.close();
    this.inline?.close();
    await this.host.mcp?.close();
    if (this.ownsTrace) this.trace.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Entry points for `mur run` and `mur serve`

const sessions = new WeakMap<StagedCapsule, Promise<ScriptSession>>();

/** The script session of a staged capsule, opened on first use. */
export function scriptSessionFor(staged: StagedCapsule, opts: ScriptSessionOptions = {}): Promise<ScriptSession> {
  let p = sessions.get(staged);
  if (!p) {
    p = ScriptSession.open(staged, opts);
    sessions.set(staged, p);
    p.catch(() => sessions.delete(staged));
  }
  return p;
}

/**
 * Runs one A2A task on a script capsule (`mur serve`): the capsule's session is opened on the
 * first task and kept; call closeScriptSession when the server stops. A capsule that cannot be
 * opened (no capsule component…) fails the task with the reason.
 */
export async function runScriptTask(
  staged: StagedCapsule,
  task: { taskId: string; contextId: string; text: string; trust?: TaskTrust },
  signal?: AbortSignal,
  io?: ScriptTaskIo,
): Promise<ScriptTaskOutcome> {
  let session: ScriptSession;
  try {
    session = await scriptSessionFor(staged);
  } catch (e) {
    return { exit: 'failed', reason: faultReason(e), ...(failureInfo(e) ? { error: failureInfo(e) } : {}) };
  }
  return session.runTask(task, { ...(signal ? { signal } : {}), source: 'a2a', ...(io ? { io } : {}) });
}

/** Ends the session runScriptTask opened for `staged` (writes session_end). */
export async function closeScriptSession(staged: StagedCapsule, exitStatus?: string): Promise<void> {
  const p = sessions.get(staged);
  sessions.delete(staged);
  const s = await p?.catch(() => undefined);
  await s?.close(exitStatus);
}

function progressLine(e: TraceEvent): string | undefined {
  switch (e.event_type) {
    case 'tool_call':
      return `tool ${String(e.tool_name)}: ${String(e.status)}${e.tool_status && e.tool_status !== 'passed' ? ` (${String(e.tool_status)})` : ''} in ${String(e.duration_ms)} ms${e.error ? ` — ${String(e.error)}` : ''}`;
    case 'shell':
      return e.refused || e.error
        ? `shell ${String(e.binary)}: ${String(e.error)}`
        : `shell ${String(e.binary)}: exit ${String(e.exit_code)} in ${String(e.duration_ms)} ms${e.truncated ? ` (truncated; full output in ${String(e.full_output_path)})` : ''}`;
    case 'a2a_send':
      return `message/send ${String(e.peer_url)}: ${e.error ? String(e.error) : String(e.state)}`;
    case 'artifact_installed':
      return `pulled ${String(e.name)} ${String(e.version)}`;
    default:
      return undefined;
  }
}

/**
 * `mur run` on a script capsule: one task from `taskText`, printed step by step unless quiet, then
 * the capsule's answer (or `task failed: <reason>`). Returns the process exit code: 0 completed,
 * 1 otherwise.
 */
export async function runScriptCapsule(
  staged: StagedCapsule,
  taskText: string,
  o: {
    out(s: string): void;
    err(s: string): void;
    quiet?: boolean;
    /** Called once the capsule's components are loaded, right before the task runs (`mur run`: cli/one-shot.ts). */
    beforeTask?: () => void;
  },
): Promise<number> {
  // One task in a process that serves nothing meanwhile: the capsule may run on this thread.
  const session = await ScriptSession.open(staged, { inline: true });
  // Nothing serves this process's metrics, so only exported spans are worth instrumenting for (and
  // loading prom-client and the span machinery for).
  const m = staged.manifest;
  const telemetry = tracingWanted(m.observability.otelEndpoint ? { endpoint: m.observability.otelEndpoint } : {})
    ? await (await import('../telemetry/instrument.ts')).instrument(session, { metrics: false })
    : undefined;
  // Components in workers: none is booted ahead for an instance that never comes (one task, each instance started once).
  const undoOneShot = session.runsInline ? () => {} : (await import('../host/workers.ts')).oneShotWorkers();
  const stop = o.quiet
    ? () => {}
    : session.trace.onEvent((e) => {
        const line = progressLine(e);
        if (line) o.out(line);
      });
  const abort = new AbortController();
  const onSigint = (): void => abort.abort(new MurError('E-RUN-020', 'interrupted'));
  process.once('SIGINT', onSigint);
  let outcome: ScriptTaskOutcome | undefined;
  try {
    if (!o.quiet)
      o.out(`capsule component: ${session.capsule.origin === 'artifact' ? `artifact ${session.capsule.name}` : session.capsule.wasmPath} (script capsule)`);
    o.beforeTask?.();
    outcome = await session.runTask(
      { taskId: randomUUID(), contextId: randomUUID(), text: taskText, trust: 'trusted' },
      { signal: abort.signal, source: 'task_md' },
    );
    if (outcome.exit === 'completed') o.out(outcome.text ?? '');
    else o.err(formatTaskFailure(outcome.exit, outcome.reason, outcome.error));
    return outcome.exit === 'completed' ? 0 : 1;
  } finally {
    process.off('SIGINT', onSigint);
    await session.close(outcome?.exit === 'completed' ? 'ok' : (outcome?.exit ?? 'failed'));
    await telemetry?.shutdown();
    undoOneShot();
    stop();
    if (!o.quiet) o.out(`trace: ${staged.workdir.trace}`);
  }
}
