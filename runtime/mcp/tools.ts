/**
 * A session's MCP tools: every server of the manifest's `mcp:` block connected as the session
 * opens, its admitted tools offered to the model beside the WASM tools, each call run under the
 * capsule's per-call deadline and its result read through the tool-result rules (result.ts).
 *
 * The calls are handed to the loop as runtime tools, so they take the loop's one guarded call
 * (runtime/loop/guarded-call.ts): `on-tool-call` before (a deny stops it) and after, the
 * `tool_call` trace event, the `execute_tool` span and the tool-call metrics. Here each call also
 * writes an `mcp_call` event (server, tool, status, error code), which the per-server metrics read.
 *
 * A server that cannot be reached as the session opens contributes no tools (an `mcp_server` event
 * says why); the session opens all the same. Only a credential variable that is not set refuses
 * the session (E-MCP-007): that is a configuration error, not an outage.
 */
import { MurError, isMurError } from '../errors.ts';
import type { McpServer } from '../manifest/mcp.ts';
import type { CapsuleManifest } from '../manifest/capsule.ts';
import type { TraceWriter } from '../trace/writer.ts';
import { McpConnection, credentialHeaders, type ConnectionOptions, type ServerRequests } from './connection.ts';
import { admitTools, type McpToolDef, type RefusedTool } from './inventory.ts';
import { toolOutcome } from './result.ts';
import type { Destination } from '../net/allowlist.ts';

/** The shape of the loop's RuntimeTool (runtime/loop/tools.ts), which this layer cannot import. */
export interface McpRuntimeTool {
  spec: { name: string; description: string; parameters: Record<string, unknown> };
  run(input: Record<string, unknown>, signal: AbortSignal): Promise<{ content: string; isError: boolean }>;
}

export interface McpToolsOptions {
  servers: readonly McpServer[];
  allow: readonly string[];
  env: NodeJS.ProcessEnv;
  /** capabilities.limits.deadline_seconds: each call's deadline. */
  deadlineSeconds: number;
  /** Every other tool name of the capsule: an MCP tool never takes one. */
  taken: ReadonlySet<string>;
  requests?: ServerRequests;
  /** Deadline of connecting to one server and listing its tools; default 30 s or the call deadline if shorter. */
  openTimeoutMs?: number;
  maxReconnects?: number;
  /** Where local (`command`) servers start: the session workdir, the shell grant. */
  stdio?: ConnectionOptions['stdio'];
}

interface ServerState {
  conn: McpConnection;
  tools: McpToolDef[];
  refused: RefusedTool[];
  error?: MurError;
}

export class McpTools {
  private trace: TraceWriter | undefined;
  /** Events from before the session's trace existed (connecting happens first). */
  private pending: Array<[string, Record<string, unknown>]> = [];

  private constructor(
    private readonly states: ServerState[],
    private readonly deadlineMs: number,
  ) {}

  static async open(o: McpToolsOptions): Promise<McpTools> {
    // A missing credential refuses the session before any connection is made.
    for (const s of o.servers) credentialHeaders(s, o.env);
    const taken = new Set(o.taken);
    const deadlineMs = o.deadlineSeconds * 1000;
    const openTimeoutMs = o.openTimeoutMs ?? Math.min(30_000, deadlineMs);
    const self = new McpTools([], deadlineMs);
    const onDenied = (server: string) => (d: Destination) =>
      self.write('network_denied', { component_kind: 'mcp', component: server, destination: `${d.scheme}://${d.host}:${d.port}` });
    const states = await Promise.all(
      o.servers.map(async (s): Promise<ServerState> => {
        const conn = new McpConnection(s, {
          allow: o.allow,
          env: o.env,
          requests: o.requests,
          onDenied: onDenied(s.name),
          openTimeoutMs,
          maxReconnects: o.maxReconnects,
          ...(o.stdio ? { stdio: o.stdio } : {}),
        });
        try {
          const listed = await conn.open();
          return { conn, ...admitTools(s, listed, taken) };
        } catch (e) {
          return { conn, tools: [], refused: [], error: isMurError(e) ? e : new MurError('E-MCP-009', `MCP server '${s.name}': ${(e as Error).message}`) };
        }
      }),
    );
    // Two servers never share a model-visible name: the prefix is the server's unique name.
    self.states.push(...states);
    for (const st of states) {
      self.write('mcp_server', {
        server: st.conn.server.name,
        url: st.conn.server.url,
        command: st.conn.server.command,
        status: st.error ? 'unavailable' : 'connected',
        tools: st.tools.map((t) => t.name),
        refused: st.refused.length ? st.refused : undefined,
        truncated_descriptions: st.tools.filter((t) => t.descriptionTruncated).map((t) => t.name),
        code: st.error?.code,
        error: st.error?.message,
      });
    }
    return self;
  }

  /** The MCP tools of a capsule manifest's `mcp:` block; undefined when it names no servers. */
  static forManifest(
    m: CapsuleManifest,
    o: { env: NodeJS.ProcessEnv; taken: ReadonlySet<string>; requests?: ServerRequests; workdir: string },
  ): Promise<McpTools> | undefined {
    if (!m.mcp?.servers.length) return undefined;
    const { workdir, ...rest } = o;
    const stdio = { workdir, shellAllow: m.capabilities.shell?.allow ?? [], stripEnv: m.capabilities.shell?.stripEnv ?? [] };
    return McpTools.open({
      servers: m.mcp.servers,
      allow: m.capabilities.network.allow,
      deadlineSeconds: m.capabilities.limits.deadlineSeconds,
      stdio,
      ...rest,
    });
  }

  /** Attaches the session's trace (writing what happened before it existed). */
  attach(trace: TraceWriter): void {
    this.trace = trace;
    for (const [type, fields] of this.pending.splice(0)) trace.write(type, fields);
  }

  private write(type: string, fields: Record<string, unknown>): void {
    if (this.trace) this.trace.write(type, fields);
    else this.pending.push([type, fields]);
  }

  /** The model-visible tools (sorted by the dispatcher with the rest of the inventory). */
  tools(): McpRuntimeTool[] {
    return this.states.flatMap((st) => st.tools.map((t) => this.runtimeTool(st, t)));
  }

  private runtimeTool(st: ServerState, t: McpToolDef): McpRuntimeTool {
    return {
      spec: { name: t.name, description: t.description, parameters: t.parameters },
      run: async (input, signal) => {
        const started = Date.now();
        try {
          const raw = await st.conn.call(t.remote, input, { signal, deadlineMs: this.deadlineMs });
          const { result, text } = toolOutcome(t.server, t.remote, raw);
          const status = result.status === 'passed' ? 'ok' : 'error';
          this.write('mcp_call', {
            server: t.server,
            tool: t.remote,
            model_tool: t.name,
            status,
            duration_ms: Date.now() - started,
            output_bytes: Buffer.byteLength(text),
            state_effect: result.stateEffect,
            resource_id: result.resourceId,
            warnings: result.warnings.length ? result.warnings : undefined,
          });
          return { content: status === 'ok' ? text : `error: MCP tool ${t.name} reported an error${text ? `: ${text}` : ''}`, isError: status !== 'ok' };
        } catch (e) {
          if (signal.aborted) throw e;
          const err = isMurError(e) ? e : new MurError('E-MCP-012', `MCP tool ${t.name}: ${(e as Error).message}`);
          this.write('mcp_call', {
            server: t.server,
            tool: t.remote,
            model_tool: t.name,
            status: 'error',
            duration_ms: Date.now() - started,
            code: err.code,
            error: err.message,
          });
          // The model is told what failed and that it may go on without it.
          return { content: `error: MCP tool ${t.name} failed [${err.code}]: ${err.message}${err.hint ? ` (${err.hint})` : ''}`, isError: true };
        }
      },
    };
  }

  /** Names of every model-visible MCP tool (metric label values). */
  names(): string[] {
    return this.states.flatMap((st) => st.tools.map((t) => t.name));
  }

  async close(): Promise<void> {
    await Promise.all(this.states.map((st) => st.conn.close()));
  }
}
