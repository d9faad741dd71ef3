/**
 * The model's tool inventory and the dispatch of one model-requested tool call: the manifest
 * capability check picks the path (WASM tool, shell, runtime tool), and each goes through the one
 * guarded call (guarded-call.ts): policy-hook decision point → run → trace + observation.
 * A refused or failed call is handed back to the model as an error result; the session goes on.
 */
import { runShell, shellEventIdentity, type ShellResult, isShellAllowed, argsFromCommand, isShellInterpreter } from '../shell/index.ts';
import { parseToolResult, toolResultPayload } from '../tools/index.ts';
import { GuestError, HostFault, DeadlineExceeded } from '../host/index.ts';
import type { ToolSpec } from '../inference/wire.ts';
import type { StagedArtifact, StagedCapsule } from '../session/stage.ts';
import type { TraceWriter } from '../trace/writer.ts';
import type { HookPort } from '../hooks/port.ts';
import type { SessionComponents } from './components.ts';
import { MurError, isMurError } from '../errors.ts';
import { scopeDir } from '../host/grants.ts';
import { shellManifestDescription } from './shell-manifests.ts';
import { guardedCall, type Acted, type ToolOutcome } from './guarded-call.ts';

export type { ToolOutcome } from './guarded-call.ts';

/** A runtime-provided tool (delegate-task). */
export interface RuntimeTool {
  spec: ToolSpec;
  run(input: Record<string, unknown>, signal: AbortSignal, meta?: { traceparent?: string }): Promise<{ content: string; isError: boolean }>;
}

export interface ToolContext {
  turn: number;
  signal: AbortSignal;
  /** W3C traceparent of the call's execute_tool span, for outgoing A2A calls (delegate-task). */
  traceparent?: string;
}

export class ToolDispatcher {
  constructor(
    private readonly staged: StagedCapsule,
    private readonly components: SessionComponents,
    private readonly hooks: HookPort,
    private readonly trace: TraceWriter,
    private readonly runtimeTools: RuntimeTool[] = [],
    private readonly hostEnv: NodeJS.ProcessEnv = process.env,
  ) {}

  private wasmTools(): StagedArtifact[] {
    return this.staged.artifacts.filter((a) => a.manifest.runtime === 'tool' && a.wasmPath);
  }

  private shellAllow(): string[] {
    return this.staged.manifest.capabilities.shell?.allow ?? [];
  }

  private enriched: Map<string, string> | undefined;

  /** Descriptions an on-stage hook wrote for shell binaries (tools/<binary>/murmur.yaml), read once. */
  private shellDescriptions(): Map<string, string> {
    if (!this.enriched) {
      this.enriched = new Map();
      const artifacts = new Set(this.staged.artifacts.map((a) => a.name));
      for (const bin of this.shellAllow()) {
        if (artifacts.has(bin)) continue; // tools/<name>/ of a staged artifact is that artifact's
        const d = shellManifestDescription(this.staged.workdir.dir, bin);
        if (d) this.enriched.set(bin, d);
      }
    }
    return this.enriched;
  }

  /** Model-visible tools, sorted by name (stable payload bytes for prefix caching). */
  inventory(): ToolSpec[] {
    const specs: ToolSpec[] = [];
    for (const a of this.wasmTools()) {
      specs.push({
        name: a.name,
        description: a.manifest.description || `The ${a.name} tool.`,
        parameters: a.manifest.inputSchema ?? { type: 'object', properties: {} },
      });
    }
    for (const bin of this.shellAllow()) {
      const generic = isShellInterpreter(bin)
        ? `Run a ${bin} script (passed as \`${bin} -c <command>\`) in the session workdir.`
        : `Run \`${bin}\` with the given arguments in the session workdir.`;
      specs.push({
        name: bin,
        description: this.shellDescriptions().get(bin) ?? generic,
        parameters: {
          type: 'object',
          properties: { command: { type: 'string', description: isShellInterpreter(bin) ? 'The script' : 'The arguments' } },
          required: ['command'],
        },
      });
    }
    for (const r of this.runtimeTools) specs.push(r.spec);
    return specs.sort((a, b) => a.name.localeCompare(b.name));
  }

  async dispatch(name: string, input: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome> {
    const started = Date.now();
    const wasm = this.wasmTools().find((a) => a.name === name);
    if (wasm) return this.runWasm(wasm, input, ctx, started);
    if (isShellAllowed(name, this.shellAllow())) return this.runShellTool(name, input, ctx, started);
    const rt = this.runtimeTools.find((r) => r.spec.name === name);
    if (rt) return this.runRuntimeTool(rt, input, ctx, started);
    const known =
      this.inventory()
        .map((t) => t.name)
        .join(', ') || 'none';
    this.trace.write('tool_call', {
      turn: ctx.turn,
      tool_name: name,
      input,
      input_bytes: JSON.stringify(input).length,
      output_bytes: 0,
      duration_ms: 0,
      status: 'error',
      error: 'unknown tool',
    });
    return { content: `error: there is no tool named '${name}' (available: ${known})`, isError: true, status: 'error', durationMs: 0, kind: 'unknown' };
  }

  private toolEvent(
    turn: number,
    name: string,
    inputJson: string,
    outcome?: { outputBytes: number; durationMs: number; status: string },
  ): Record<string, unknown> {
    return {
      turn,
      toolName: name,
      inputBytes: BigInt(Buffer.byteLength(inputJson)),
      input: inputJson,
      outcome: outcome ? { outputBytes: BigInt(outcome.outputBytes), durationMs: BigInt(outcome.durationMs), status: outcome.status } : undefined,
    };
  }

  /** One tool-call trace event and the observation hooks, for a WASM or runtime tool. */
  private async observeToolCall(
    turn: number,
    name: string,
    input: Record<string, unknown>,
    inputJson: string,
    r: Acted & ToolMeta,
    durationMs: number,
    output?: string,
  ): Promise<void> {
    const outBytes = Buffer.byteLength(r.content);
    this.trace.write('tool_call', {
      turn,
      tool_name: name,
      input,
      input_bytes: Buffer.byteLength(inputJson),
      output,
      output_bytes: outBytes,
      duration_ms: durationMs,
      status: r.status,
      state_effect: r.stateEffect,
      resource_id: r.resourceId,
      continuation_id: r.continuationId || undefined,
    });
    await this.hooks.toolObserved(this.toolEvent(turn, name, inputJson, { outputBytes: outBytes, durationMs, status: r.status }));
  }

  private runWasm(a: StagedArtifact, input: Record<string, unknown>, ctx: ToolContext, started: number): Promise<ToolOutcome> {
    const inputJson = JSON.stringify(input);
    // Kept across a failure after the result was read (its data-path unreadable): still traced.
    let meta: ToolMeta = {};
    return guardedCall<Acted & ToolMeta>({
      kind: 'wasm',
      started,
      signal: ctx.signal,
      decide: () => this.hooks.toolDecision(this.toolEvent(ctx.turn, a.name, inputJson)),
      run: async () => {
        const inst = await this.components.tool(a);
        const raw = await raceAbort(inst.call(['run', 'run'], [{ data: inputJson, logPath: undefined }]), ctx.signal, () =>
          this.components.interruptTool(a.name),
        );
        const result = parseToolResult(raw);
        meta = { stateEffect: result.stateEffect, resourceId: result.resourceId, continuationId: result.continuationId };
        // data-path is read beneath the tool's own `.` (its scope), never elsewhere in the workdir.
        const payload = await toolResultPayload(scopeDir(a.grant, this.staged.workdir.dir), result);
        if (result.status !== 'passed') {
          return {
            ...meta,
            status: 'error',
            content: `tool ${a.name} reported ${result.status}${result.summary ? `: ${result.summary}` : ''}${payload !== undefined ? `\n${payload}` : ''}`,
          };
        }
        return { ...meta, status: 'ok', content: payload ?? result.summary ?? '' };
      },
      failed: (e) => ({ ...meta, status: 'error', content: `error: tool ${a.name} failed: ${describe(e)}` }),
      observe: (r, durationMs) =>
        this.observeToolCall(ctx.turn, a.name, input, inputJson, r, durationMs, this.staged.manifest.trace.includeToolOutput ? r.content : undefined),
    });
  }

  private async runShellTool(bin: string, input: Record<string, unknown>, ctx: ToolContext, started: number): Promise<ToolOutcome> {
    const command = typeof input.command === 'string' ? input.command : undefined;
    const args = command === undefined ? undefined : argsFromCommand(bin, command);
    if (args === undefined) {
      return {
        content: `error: the ${bin} tool takes {"command": "<${isShellInterpreter(bin) ? 'script' : 'arguments'}>"}${command !== undefined ? ' with balanced quotes' : ''}`,
        isError: true,
        status: 'error',
        durationMs: 0,
        kind: 'shell',
      };
    }
    const workdir = this.staged.workdir.dir;
    const identity = await shellEventIdentity({ binary: bin, args, workdir, env: this.hostEnv });
    const traced = {
      turn: ctx.turn,
      binary: identity.binary,
      command: identity.command,
      argv: identity.argv,
      script: identity.script,
      recipe: identity.recipe,
    };
    const shellEvent = (outcome?: Record<string, unknown>) => ({ ...traced, outcome });
    type ShellActed = Acted & { ran?: ShellResult; error?: unknown };
    return guardedCall<ShellActed>({
      kind: 'shell',
      started,
      signal: ctx.signal,
      decide: () => this.hooks.shellDecision(shellEvent()),
      run: async () => {
        const r = await runShell({
          binary: bin,
          args,
          workdir,
          allow: this.shellAllow(),
          env: this.hostEnv,
          stripEnvGlobs: this.staged.manifest.capabilities.shell?.stripEnv,
          signal: ctx.signal,
          identity,
          timeoutMs: this.staged.manifest.capabilities.limits.deadlineSeconds * 1000,
        });
        const shown = identity.script ?? [bin, ...args].join(' ');
        let content = `$ ${shown}\nExit code: ${r.exitCode}\nStdout:\n${r.stdout}\nStderr:\n${r.stderr}`;
        if (r.truncated) content += `\n[output truncated at 16 KiB; full output in ${r.fullOutputPath}]`;
        // A non-zero exit is data, not an error.
        return { ran: r, status: 'ok', content };
      },
      failed: (e) => ({ error: e, status: 'error', content: `error: ${bin} could not run: ${describe(e)}` }),
      observe: async ({ ran: r, error }, durationMs) => {
        if (!r) {
          // It did not run (not found, not executable): still a shell call in the trace, with why;
          // there is nothing to observe.
          this.trace.write('shell', { ...traced, error: describe(error), duration_ms: durationMs });
          return;
        }
        this.trace.write('shell', {
          ...traced,
          exit_code: r.exitCode,
          stdout_bytes: r.stdoutBytes,
          stderr_bytes: r.stderrBytes,
          duration_ms: r.durationMs,
          truncated: r.truncated || undefined,
          full_output_path: r.fullOutputPath,
        });
        await this.hooks.shellObserved(
          shellEvent({
            exitCode: r.exitCode,
            stdout: r.stdout,
            stderr: r.stderr,
            stdoutBytes: BigInt(r.stdoutBytes),
            stderrBytes: BigInt(r.stderrBytes),
            durationMs: BigInt(r.durationMs),
          }),
        );
      },
    });
  }

  private runRuntimeTool(rt: RuntimeTool, input: Record<string, unknown>, ctx: ToolContext, started: number): Promise<ToolOutcome> {
    const inputJson = JSON.stringify(input);
    return guardedCall<Acted>({
      kind: 'runtime',
      started,
      signal: ctx.signal,
      decide: () => this.hooks.toolDecision(this.toolEvent(ctx.turn, rt.spec.name, inputJson)),
      run: async () => {
        const out = await rt.run(input, ctx.signal, { traceparent: ctx.traceparent });
        return { content: out.content, status: out.isError ? 'error' : 'ok' };
      },
      failed: (e) => ({ status: 'error', content: `error: ${rt.spec.name} failed: ${describe(e)}` }),
      observe: (r, durationMs) => this.observeToolCall(ctx.turn, rt.spec.name, input, inputJson, r, durationMs),
    });
  }
}

/** What a WASM tool's result says about its effect, for the trace. */
interface ToolMeta {
  stateEffect?: string;
  resourceId?: string;
  continuationId?: string;
}

export function describe(e: unknown): string {
  if (e instanceof GuestError) return e.message;
  if (e instanceof DeadlineExceeded) return e.message;
  if (e instanceof HostFault) return e.message;
  if (isMurError(e)) return `${e.message}${e.hint ? ` (${e.hint})` : ''}`;
  return e instanceof Error ? e.message : String(e);
}

/** Races a call against cancellation; on abort, `onAbort` stops the work (kills the worker). */
export async function raceAbort<T>(p: Promise<T>, signal: AbortSignal, onAbort: () => Promise<void> | void): Promise<T> {
  if (signal.aborted) throw signal.reason ?? new MurError('E-RUN-020', 'canceled');
  let off = (): void => {};
  const aborted = new Promise<never>((_, reject) => {
    const h = (): void => {
      void onAbort();
      reject(signal.reason ?? new MurError('E-RUN-020', 'canceled'));
    };
    signal.addEventListener('abort', h, { once: true });
    off = () => signal.removeEventListener('abort', h);
  });
  try {
    return await Promise.race([p, aborted]);
  } finally {
    off();
  }
}
