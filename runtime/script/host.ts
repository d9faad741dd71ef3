/**
 * The runtime-host interfaces a script capsule component imports (`murmur:host/runtime-host`):
 *
 * | import                             | host side                                                    |
 * |------------------------------------|--------------------------------------------------------------|
 * | `murmur:tool-registry/invoke`      | a declared (or pulled) WASM tool, in its own instance, under  |
 * |                                    | its own grant clamped to the capsule's; `tool_call` trace     |
 * | `murmur:shell/execute`             | runtime/shell runShell: allowlist before spawn, exit code is  |
 * |                                    | data, 16 KiB truncation + full-output-path, env stripping     |
 * | `murmur:artifact-manager/manage`   | runtime/registry ArtifactManager                             |
 * | `murmur:message/send`              | runtime/a2a/client sendMessage (network allowlist first)     |
 *
 * WIT `err` convention of this host (runtime/host/instance.ts serveHostCall): a host function that
 * throws a NON-Error value (here: always the err string) hands that value to the guest as the
 * `err` case; jco's glue catches it (`getErrorPayload`) and lowers `{tag: 'err', val}`. Throwing an
 * `Error` is a host fault instead — the guest traps and the call fails as E-HOST-006 — which is why
 * ArtifactManager#jcoImports (Error objects carrying `payload`) is not used here.
 */
import { fileDigest } from '../host/file-digest.ts';
import { GuestError, HostFault } from '../host/errors.ts';
import type { HostImports } from '../host/import-spec.ts';
import type { ComponentInstance } from '../host/instance.ts';
import { loadComponent } from '../host/transpile-cache.ts';
import { httpAllow, guestEnv, grantsFor, logFileFor } from '../host/grants.ts';
import type { Grants, NetworkDenial } from '../host/protocol.ts';
import type { EffectiveGrant } from '../manifest/capsule.ts';
import { peerTokens } from '../a2a/peers/credentials.ts';
import { ArtifactManager, type Result } from '../session/artifact-manager.ts';
import type { StagedArtifact, StagedCapsule } from '../session/stage.ts';
import { parseToolResult } from '../tools/index.ts';
import type { TraceWriter } from '../trace/writer.ts';
import { traceNetworkDenied } from '../trace/network-denied.ts';
import { currentTraceparent, startToolSpan } from '../telemetry/spans.ts';
import { isMurError } from '../errors.ts';
import { clampGrant, type CapsuleComponent } from './capsule.ts';
import type { McpTools } from '../mcp/index.ts';
import { invokeMcp } from './mcp.ts';
import type { WitToolInput, WitToolResult, WitShellResult, WitMessage, WitTaskResult, HostTask, Totals } from './host-records.ts';

export type { WitToolInput, WitToolResult, WitShellResult, WitMessage, WitTaskResult, ScriptTaskIo, HostTask, Totals } from './host-records.ts';

export interface ScriptHostOptions {
  hostEnv?: NodeJS.ProcessEnv;
}

type Settled = { status: 'ok' | 'error'; kind: 'wasm' | 'mcp' | 'unknown'; isError: boolean };

/** One murmur:tool-registry/invoke call while it runs. */
interface Invocation {
  name: string;
  data: string | undefined;
  /** The tool's `tool-input` as the host hands it on. */
  input: { data: string | undefined; logPath: string | undefined };
  /** The callable WASM tool of that name, if there is one. */
  tool?: StagedArtifact;
  /** Writes the call's `tool_call` event. */
  event(fields: Record<string, unknown>): void;
  span: { end(outcome: Settled): void };
  outcome: Settled;
}

/** Raises a WIT `err` with `message` (see the module comment). */
function witErr(message: string): never {
  throw message;
}

function unwrap<T>(r: Result<T>): T {
  if (r.tag === 'ok') return r.val;
  return witErr(r.val);
}

function inputForTrace(data: string | undefined): unknown {
  if (data === undefined) return undefined;
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

function errText(e: unknown): string {
  // The agent loop's wording of a failed call (loop/tools.ts describe), with the code; written
  // out here so a capsule's run loads no agent loop: a fault's message says it all, another
  // MurError's hint is added.
  if (e instanceof GuestError) return e.message;
  if (e instanceof HostFault) return `${e.message} [${e.code}]`;
  if (isMurError(e)) return `${e.message}${e.hint ? ` (${e.hint})` : ''} [${e.code}]`;
  return e instanceof Error ? e.message : String(e);
}

/**
 * One per script session: owns the tool instances and answers the capsule component's host
 * imports for whichever task is current.
 */
export class ScriptHost {
  readonly totals: Totals = { toolCalls: 0, shellCalls: 0, a2aSends: 0, pulls: 0 };
  readonly manager: ArtifactManager;
  private readonly tools = new Map<string, Promise<ComponentInstance>>();
  /** SHA-256 of every tool's component as staged or pulled: a file changed since is refused. */
  private readonly pins = new Map<string, string>();
  private readonly hostEnv: NodeJS.ProcessEnv;
  private task: HostTask | undefined;
  private running = new Set<string>();
  /** The capsule's MCP tools, invoked by name like its WASM tools (script/mcp.ts). */
  mcp: McpTools | undefined;

  constructor(
    private readonly staged: StagedCapsule,
    private readonly capsule: CapsuleComponent,
    private readonly trace: TraceWriter,
    opts: ScriptHostOptions = {},
  ) {
    this.hostEnv = opts.hostEnv ?? process.env;
    for (const a of this.callable()) this.pin(a);
    this.manager = new ArtifactManager(staged, {
      onInstalled: (a) => {
        this.totals.pulls++;
        if (a.runtime === 'tool' && a.wasmPath) this.pin(a);
        this.trace.write('artifact_installed', {
          name: a.name,
          version: a.version,
          runtime: a.runtime,
          sha256: a.sha256,
          origin: a.origin,
          task_id: this.task?.taskId,
        });
      },
    });
  }

  private pin(a: StagedArtifact): void {
    if (!a.wasmPath) return;
    try {
      // The digest the start already computed or verified for this file as it is, when there is one (host/file-digest.ts).
      this.pins.set(a.name, fileDigest(a.wasmPath));
    } catch {
      /* a missing file fails at load, with the loader's message */
    }
  }

  /** The directory granted to the capsule component (its `/`). */
  get grantedDir(): string {
    return grantsDir(this.staged, this.capsule);
  }

  /** Tools the capsule may invoke: WASM tools declared in the manifest or pulled this session. */
  callable(): StagedArtifact[] {
    return this.staged.artifacts.filter((a) => a.runtime === 'tool' && a.wasmPath && !(this.capsule.origin === 'artifact' && a === this.capsule.artifact));
  }

  setTask(t: HostTask | undefined): void {
    this.task = t;
  }

  get currentTask(): HostTask | undefined {
    return this.task;
  }

  /** The imports handed to the capsule component. */
  imports(): HostImports {
    return {
      // murmur:tool-registry/invoke `use`s tool-input and tool-result from murmur:tool/run, so some
      // toolchains (componentize-js) import that interface's `run` too. It is never meant to be
      // called by a capsule: calling it is a host fault.
      'murmur:tool/run': {
        run: () => {
          throw new Error('murmur:tool/run is not callable from a capsule; call tools through murmur:tool-registry/invoke');
        },
      },
      'murmur:tool-registry/invoke': { invoke: (name: string, input: WitToolInput) => this.invoke(name, input ?? {}) },
      'murmur:shell/execute': { run: (binary: string, args: string[], env: [string, string][]) => this.shell(binary, args ?? [], env ?? []) },
      'murmur:artifact-manager/manage': {
        list: () => this.manager.list(),
        describe: (name: string) => unwrap(this.manager.describe(name)),
        search: (q: string) => unwrap(this.manager.search(q)),
        pull: (name: string, version: string) => unwrap(this.manager.pull(name, version)),
        remove: (name: string) => unwrap(this.manager.remove(name)),
        diagnostics: () => unwrap(this.manager.diagnostics()),
      },
      'murmur:message/send': { send: (peerUrl: string, message: WitMessage) => this.send(peerUrl, message) },
    };
  }

  // -------------------------------------------------------------------------------------------
  // murmur:tool-registry/invoke

  /** A tool's grant (clamped to the capsule's) as the host's per-instance grants. */
  toolGrants(a: StagedArtifact): { grant: EffectiveGrant; grants: Grants } {
    const grant = clampGrant(a.grant, this.capsule.grant);
    const wd = this.staged.workdir.dir;
    const config: Record<string, string> = a.entry?.config ? { MURMUR_ARTIFACT_CONFIG: JSON.stringify(a.entry.config) } : {};
    const grants = grantsFor(grant, wd, logFileFor(wd, 'tool', a.name), config);
    grants.env = { ...guestEnv(grant.env.allow, this.hostEnv), ...config };
    return { grant, grants };
  }

  /** The host imports a tool instance gets (murmur:text/chunks, murmur:task/task), for the current task. */
  toolImports(): HostImports {
    return {
      'murmur:text/chunks': {
        emitChunk: (c: string) => this.task?.io?.textChunk?.(c),
        emitThinkingChunk: (c: string) => this.task?.io?.thinkingChunk?.(c),
      },
      'murmur:task/task': {
        requestInput: (prompt: string) => {
          const ask = this.task?.io?.requestInput;
          // Outside an A2A task there is nobody to answer: fail the call at once.
          if (!ask) throw new Error('request-input is only available while the capsule runs an A2A task');
          return ask(prompt);
        },
      },
    };
  }

  /** Tells the trace of a network request a tool's grant refused. */
  toolDenied(a: StagedArtifact): (d: NetworkDenial) => void {
    return traceNetworkDenied(
      () => this.trace,
      'tool',
      a.name,
      () => this.task?.taskId,
    );
  }

  private toolInstance(a: StagedArtifact): Promise<ComponentInstance> {
    let p = this.tools.get(a.name);
    if (!p) {
      p = (async () => {
        const { grant, grants } = this.toolGrants(a);
        const c = await loadComponent(a.wasmPath!, { name: a.name, ...(this.pins.has(a.name) ? { sha256: this.pins.get(a.name)! } : {}) });
        const { ComponentInstance } = await import('../host/instance.ts');
        return new ComponentInstance(c, {
          grants,
          onNetworkDenied: this.toolDenied(a),
          imports: this.toolImports(),
          deadlineMs: grant.limits.deadlineSeconds * 1000,
          memoryBytes: grant.limits.memoryBytes,
        });
      })();
      this.tools.set(a.name, p);
      p.catch(() => this.tools.delete(a.name));
    }
    return p;
  }

  /** The SHA-256 a tool's component was pinned at when staged or pulled (a file changed since is refused). */
  pinOf(name: string): string | undefined {
    return this.pins.get(name);
  }

  async invoke(name: string, input: WitToolInput): Promise<WitToolResult> {
    const call = this.beginInvoke(name, input);
    try {
      const mcp = call.tool ? undefined : this.mcp?.tools().find((t) => t.spec.name === name);
      if (mcp) {
        const r = await invokeMcp(mcp, call.data, this.task?.signal ?? new AbortController().signal);
        call.event(r.event);
        call.outcome = { status: r.result.status === 'passed' ? 'ok' : 'error', kind: 'mcp', isError: r.result.status !== 'passed' };
        return r.result;
      }
      const tool = call.tool;
      if (!tool) return this.refuse(call);
      this.running.add(name);
      try {
        const inst = await this.toolInstance(tool);
        return this.toolAnswered(call, tool, await inst.call(['run', 'run'], [call.input]));
      } catch (e) {
        return this.toolFailed(call, e);
      } finally {
        this.running.delete(name);
      }
    } finally {
      call.span.end(call.outcome);
    }
  }

  /**
   * murmur:tool-registry/invoke answered before returning, the tool run on this thread inside the
   * capsule's call (a capsule run on the main thread: script/inline-run.ts). What invoke() does,
   * for the WASM tools such a capsule may have (no MCP servers).
   */
  invokeSync(name: string, input: WitToolInput, run: (tool: StagedArtifact, input: WitToolInput) => unknown): WitToolResult {
    const call = this.beginInvoke(name, input);
    try {
      const tool = call.tool;
      if (!tool) return this.refuse(call);
      this.running.add(name);
      try {
        return this.toolAnswered(call, tool, run(tool, call.input));
      } catch (e) {
        // Ctrl-C ends the capsule's run too, not only this tool call.
        if (isMurError(e) && e.code === 'E-RUN-020') throw e;
        return this.toolFailed(call, e);
      } finally {
        this.running.delete(name);
      }
    } finally {
      call.span.end(call.outcome);
    }
  }

  /** The start of an invoke: which tool, the trace event it writes when it settles, its span. */
  private beginInvoke(name: string, input: WitToolInput): Invocation {
    const started = Date.now();
    const data = typeof input.data === 'string' ? input.data : undefined;
    const inputBytes = data === undefined ? 0 : Buffer.byteLength(data);
    const event = (fields: Record<string, unknown>): void => {
      this.totals.toolCalls++;
      const durationMs = Date.now() - started;
      this.trace.write('tool_call', {
        caller: 'capsule',
        task_id: this.task?.taskId,
        tool_name: name,
        input: inputForTrace(data),
        input_bytes: inputBytes,
        duration_ms: durationMs,
        ...fields,
      });
      this.task?.io?.artifact?.({ name: 'tool-call', data: { tool: name, status: fields.status, duration_ms: durationMs, caller: 'capsule' } });
    };
    const tool = this.callable().find((a) => a.name === name);
    // execute_tool <name> under the task span (a no-op without telemetry); the tool_call event
    // written before it ends fills in its attributes.
    const span = startToolSpan(this.trace, { name, known: tool !== undefined });
    return {
      name,
      data,
      input: { data, logPath: typeof input.logPath === 'string' ? input.logPath : undefined },
      ...(tool ? { tool } : {}),
      event,
      span,
      outcome: { status: 'error', kind: tool ? 'wasm' : 'unknown', isError: true },
    };
  }

  /** An invoke of something that is not a callable tool: the trace says why, and so does the WIT `err`. */
  private refuse(call: Invocation): never {
    const name = call.name;
    const all = this.staged.artifacts.find((a) => a.name === name);
    let why: string;
    if (all && this.capsule.artifact === all) why = `tool '${name}' is the capsule component itself; a capsule cannot invoke itself [E-SCRIPT-021]`;
    else if (all) why = `'${name}' is a ${all.runtime} artifact, not a tool; only tools can be invoked [E-SCRIPT-021]`;
    else {
      const known = this.callable().map((a) => a.name);
      why = `tool '${name}' is not declared in ${this.staged.manifest.file} (callable tools: ${known.length ? known.join(', ') : 'none'}); declare it under artifacts, or pull it first [E-SCRIPT-020]`;
    }
    call.event({ output_bytes: 0, status: 'error', error: why });
    return witErr(why);
  }

  private toolAnswered(call: Invocation, tool: StagedArtifact, raw: unknown): WitToolResult {
    const r = parseToolResult(raw);
    const out = r.data ?? r.summary ?? '';
    call.event({
      output: this.staged.manifest.trace.includeToolOutput ? out : undefined,
      output_bytes: Buffer.byteLength(out),
      status: r.status === 'passed' ? 'ok' : 'error',
      tool_status: r.status,
      state_effect: r.stateEffect,
      resource_id: r.resourceId,
      origin: tool.origin === 'pull' ? 'pull' : undefined,
    });
    call.outcome = { status: r.status === 'passed' ? 'ok' : 'error', kind: 'wasm', isError: r.status !== 'passed' };
    return { status: r.status, summary: r.summary, data: r.data, dataPath: r.dataPath, truncated: r.truncated, metadata: r.metadata };
  }

  private toolFailed(call: Invocation, e: unknown): never {
    const why = `tool '${call.name}' failed: ${errText(e)}`;
    call.event({ output_bytes: 0, status: 'error', error: why });
    return witErr(why);
  }

  // -------------------------------------------------------------------------------------------
  // murmur:shell/execute

  async shell(binary: string, args: string[], env: [string, string][]): Promise<WitShellResult> {
    const grant = this.capsule.grant;
    const allow = grant.shell?.allow ?? [];
    const started = Date.now();
    this.totals.shellCalls++;
    // The shell tool loads with a capsule's first command (a capsule run on the main thread has none).
    const { isShellAllowed, runShell, ShellNotAllowedError } = await import('../shell/index.ts');
    if (!isShellAllowed(binary, allow)) {
      const e = new ShellNotAllowedError(binary, allow);
      this.trace.write('shell', { caller: 'capsule', task_id: this.task?.taskId, binary, argv: args, refused: true, error: e.message, duration_ms: 0 });
      return witErr(`${e.message} [${e.code}]`);
    }
    try {
      const r = await runShell({
        binary,
        args,
        workdir: this.grantedDir,
        allow,
        env: { ...this.hostEnv, ...Object.fromEntries(env) },
        stripEnvGlobs: grant.shell?.stripEnv,
        timeoutMs: grant.limits.deadlineSeconds * 1000,
        ...(this.task ? { signal: this.task.signal } : {}),
      });
      this.trace.write('shell', {
        caller: 'capsule',
        task_id: this.task?.taskId,
        binary: r.identity.binary,
        command: r.identity.command,
        argv: r.identity.argv,
        script: r.identity.script,
        exit_code: r.exitCode,
        stdout_bytes: r.stdoutBytes,
        stderr_bytes: r.stderrBytes,
        duration_ms: r.durationMs,
        truncated: r.truncated || undefined,
        full_output_path: r.fullOutputPath,
        timed_out: r.timedOut || undefined,
      });
      return { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, truncated: r.truncated, fullOutputPath: r.fullOutputPath };
    } catch (e) {
      const why = errText(e);
      this.trace.write('shell', { caller: 'capsule', task_id: this.task?.taskId, binary, argv: args, error: why, duration_ms: Date.now() - started });
      return witErr(why);
    }
  }

  // -------------------------------------------------------------------------------------------
  // murmur:message/send

  async send(peerUrl: string, message: WitMessage): Promise<WitTaskResult> {
    const started = Date.now();
    this.totals.a2aSends++;
    // This capsule's own credential for the peer (a projected ServiceAccount token in a pod): without
    // it the peer serves the call anonymously, if at all, and ignores the trust it is stamped with.
    const bearer = peerTokens()(peerUrl);
    // The SDK's client loads with the first send (delegate-task.ts says why).
    const { sendMessage } = await import('../a2a/peers/client.ts');
    const r = await sendMessage({
      peerUrl,
      allow: httpAllow(this.capsule.grant.network.allow),
      ...(bearer ? { bearer } : {}),
      text: message.text,
      messageId: message.messageId,
      ...(message.contextId ? { contextId: message.contextId } : {}),
      trust: this.task?.trust ?? 'untrusted',
      ...(this.task ? { signal: this.task.signal } : {}),
      // With OTel configured, the peer's task span nests under this task's.
      traceparent: currentTraceparent(this.trace),
    });
    this.trace.write('a2a_send', {
      task_id: this.task?.taskId,
      peer_url: peerUrl,
      message_id: message.messageId,
      duration_ms: Date.now() - started,
      ...(r.ok ? { peer_task_id: r.taskId, context_id: r.contextId, state: r.state } : { error: r.error }),
    });
    if (!r.ok) return witErr(r.error);
    return { taskId: r.taskId, contextId: r.contextId, state: r.state };
  }

  /** Stops the tools still running (a canceled task). */
  async interruptTools(): Promise<void> {
    for (const name of [...this.running]) {
      const p = this.tools.get(name);
      this.tools.delete(name);
      if (p) await (await p.catch(() => undefined))?.close();
    }
  }

  async close(): Promise<void> {
    const all = [...this.tools.values()];
    this.tools.clear();
    await Promise.all(all.map(async (p) => (await p.catch(() => undefined))?.close()));
  }
}

/** `<workdir>/<scope>` of the capsule component (created by grantsFor). */
export function grantsDir(staged: StagedCapsule, capsule: CapsuleComponent): string {
  const g = grantsFor(capsule.grant, staged.workdir.dir, logFileFor(staged.workdir.dir, 'capsule', capsule.name));
  return g.preopen ?? staged.workdir.dir;
}
