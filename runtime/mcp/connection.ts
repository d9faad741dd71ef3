/**
 * One MCP server, through the official TypeScript SDK's Client over its Streamable HTTP transport
 * (no protocol code of our own): connect + initialize, list the tools, call one under a deadline,
 * and the requests the server makes of the client (elicitation, sampling) mapped onto what the
 * runtime has. Every HTTP request goes through guardedFetch (allowlist, no redirects, byte bound).
 *
 * Failures are per call: a server that is down, slow, answers garbage or drops its session fails
 * that call with an `E-MCP-*` error; a dropped connection is re-opened for the next call, at most
 * `maxReconnects` times in the session (then the server's tools answer E-MCP-013 without trying).
 * Calls are never retried: a tool call may have had its effect before the connection went.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ErrorCode,
  McpError,
  ResultSchema,
  type CreateMessageRequest,
  type CreateMessageResult,
  type ElicitRequest,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { MurError, isMurError } from '../errors.ts';
import { holdSecret } from '../secrets.ts';
import type { McpServer } from '../manifest/mcp.ts';
import type { Destination } from '../net/allowlist.ts';
import { guardedFetch } from './fetch.ts';
import { stdioTransport, type StdioOptions } from './stdio.ts';
import { MCP_RESULT_MAX_BYTES } from './result.ts';

/** Pages of `tools/list` followed; a server paging for ever is cut here. */
const MAX_LIST_PAGES = 8;
/** Reconnections of one server in a session. */
export const MAX_RECONNECTS = 3;
/** A response is the result plus JSON-RPC framing and escaping: bounded at twice the result bound. */
const MAX_RESPONSE_BYTES = 2 * MCP_RESULT_MAX_BYTES;
export const CLIENT_INFO = { name: 'mur', version: '0.1.0' };

/** What the runtime answers for the server's own requests; absent = refused with the protocol's error. */
export interface ServerRequests {
  elicit?(server: string, params: ElicitRequest['params'], signal: AbortSignal): Promise<ElicitResult>;
  sample?(server: string, params: CreateMessageRequest['params'], signal: AbortSignal): Promise<CreateMessageResult>;
  progress?(server: string, tool: string, p: { progress: number; total?: number; message?: string }): void;
}

export interface ConnectionOptions {
  allow: readonly string[];
  env: NodeJS.ProcessEnv;
  requests?: ServerRequests;
  onDenied?: (d: Destination) => void;
  /** Deadline of connecting and listing (ms). */
  openTimeoutMs: number;
  /** For a server with a `command` (stdio.ts): where and how it is started. */
  stdio?: Omit<StdioOptions, 'env'>;
  maxReconnects?: number;
}

export interface CallOptions {
  signal: AbortSignal;
  deadlineMs: number;
}

export class McpConnection {
  private client: Client | undefined;
  private reconnects = 0;
  private readonly inflight = new Set<AbortController>();
  private readonly release: Array<() => void> = [];
  private readonly headers: Record<string, string>;
  /** A stdio server's last stderr bytes (for the error when it dies). */
  private stderr: () => string = () => '';

  constructor(
    readonly server: McpServer,
    private readonly o: ConnectionOptions,
  ) {
    this.headers = credentialHeaders(server, o.env);
    // Held as secrets from here: the trace, spans, answers and printed lines redact them.
    for (const v of Object.values(this.headers)) this.release.push(holdSecret(v.replace(/^Bearer /, '')));
  }

  /** Connects and lists the server's tools (raw `tools/list` entries, unvalidated). */
  async open(): Promise<unknown[]> {
    const ac = new AbortController();
    const timer = setTimeout(
      () => ac.abort(new MurError('E-MCP-010', `MCP server '${this.server.name}' did not answer initialize and tools/list within ${this.o.openTimeoutMs} ms`)),
      this.o.openTimeoutMs,
    );
    try {
      const client = await this.connect(ac.signal);
      const tools: unknown[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        // Listed loosely: each tool is checked on its own (inventory.ts), so one tool with a bad
        // schema costs that tool, not the server.
        const r = (await client.request({ method: 'tools/list', params: cursor ? { cursor } : {} }, ResultSchema, {
          signal: ac.signal,
          timeout: this.o.openTimeoutMs,
        })) as { tools?: unknown; nextCursor?: unknown };
        if (!Array.isArray(r.tools)) throw new MurError('E-MCP-012', `MCP server '${this.server.name}' answered tools/list without a tools list`);
        tools.push(...r.tools);
        if (typeof r.nextCursor !== 'string') break;
        cursor = r.nextCursor;
      }
      return tools;
    } catch (e) {
      await this.drop();
      throw this.classify(e, ac.signal, 'tools/list');
    } finally {
      clearTimeout(timer);
    }
  }

  private async connect(signal: AbortSignal): Promise<Client> {
    const s = this.server;
    const capabilities: Record<string, object> = {};
    // applyDefaults: the SDK fills the fields a caller's answer leaves out with the schema's defaults.
    if (s.elicitation === 'input-required' && this.o.requests?.elicit) capabilities.elicitation = { form: { applyDefaults: true } };
    if (s.sampling === 'driver' && this.o.requests?.sample) capabilities.sampling = {};
    const client = new Client(CLIENT_INFO, { capabilities });
    if (capabilities.elicitation) client.setRequestHandler(ElicitRequestSchema, (req, extra) => this.o.requests!.elicit!(s.name, req.params, extra.signal));
    if (capabilities.sampling) client.setRequestHandler(CreateMessageRequestSchema, (req, extra) => this.o.requests!.sample!(s.name, req.params, extra.signal));
    const transport = s.command
      ? await this.stdio()
      : new StreamableHTTPClientTransport(new URL(s.url!), {
          fetch: guardedFetch({
            server: s.name,
            allow: this.o.allow,
            maxBytes: MAX_RESPONSE_BYTES,
            onDenied: this.o.onDenied,
            onOverflow: (e) => this.failInflight(e),
          }),
          requestInit: { headers: this.headers },
          // The transport's own GET-stream retries, bounded like the runtime's reconnects.
          reconnectionOptions: { maxRetries: 1, initialReconnectionDelay: 100, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 2 },
        });
    // A connection that fails later (the server went away) is noticed by the next call.
    client.onclose = () => {
      if (this.client === client) this.client = undefined;
    };
    await client.connect(transport, { signal, timeout: this.o.openTimeoutMs });
    this.client = client;
    return client;
  }

  private async stdio() {
    if (!this.o.stdio) throw new MurError('E-MCP-009', `MCP server '${this.server.name}' is a local command, and this session starts none`);
    const { transport, stderr } = await stdioTransport(this.server, { ...this.o.stdio, env: this.o.env });
    this.stderr = stderr;
    return transport;
  }

  /** Calls one tool; the SDK-validated result, or an `E-MCP-*` MurError. */
  async call(
    tool: string,
    args: Record<string, unknown>,
    c: CallOptions,
  ): Promise<{ content?: unknown; structuredContent?: unknown; isError?: unknown; _meta?: unknown }> {
    const ac = new AbortController();
    const onAbort = (): void => ac.abort(c.signal.reason);
    c.signal.addEventListener('abort', onAbort, { once: true });
    this.inflight.add(ac);
    try {
      const client = this.client ?? (await this.reconnect(ac.signal));
      return await client.callTool({ name: tool, arguments: args }, CallToolResultSchema, {
        signal: ac.signal,
        timeout: c.deadlineMs,
        maxTotalTimeout: c.deadlineMs,
        onprogress: (p) => this.o.requests?.progress?.(this.server.name, tool, p),
      });
    } catch (e) {
      if (c.signal.aborted) throw e;
      const err = this.classify(e, ac.signal, `tools/call ${tool}`);
      // A connection-level failure: the next call opens a new one (bounded).
      if (['E-MCP-009', 'E-MCP-011', 'E-MCP-013'].includes(err.code)) await this.drop();
      throw err;
    } finally {
      this.inflight.delete(ac);
      c.signal.removeEventListener('abort', onAbort);
    }
  }

  private async reconnect(signal: AbortSignal): Promise<Client> {
    const max = this.o.maxReconnects ?? MAX_RECONNECTS;
    if (this.reconnects >= max) {
      throw new MurError('E-MCP-013', `MCP server '${this.server.name}' is not connected and was reconnected ${max} times in this session already`, {
        hint: 'the server keeps dropping its sessions; its tools stay unavailable until a new session',
      });
    }
    this.reconnects++;
    return this.connect(signal);
  }

  private failInflight(e: MurError): void {
    for (const ac of this.inflight) ac.abort(e);
  }

  /** Any failure as an `E-MCP-*` error naming the server and what was asked. */
  private classify(e: unknown, signal: AbortSignal, what: string): MurError {
    const reason = signal.aborted ? signal.reason : undefined;
    if (isMurError(reason) && reason.code.startsWith('E-MCP-')) return reason;
    if (isMurError(e) && e.code.startsWith('E-MCP-')) return e;
    const name = this.server.name;
    if (e instanceof McpError && e.code === ErrorCode.RequestTimeout) {
      return new MurError('E-MCP-010', `MCP server '${name}' did not answer ${what} within its deadline`, {
        hint: 'the call was cancelled at the server; the deadline is capabilities.limits.deadline_seconds',
        cause: e,
      });
    }
    // The SDK's own "connection closed" (a server may send -32000 as an error of its own too).
    if (e instanceof McpError && e.code === ErrorCode.ConnectionClosed && /: Connection closed$/.test(e.message)) {
      return new MurError('E-MCP-013', `MCP server '${name}' closed the connection during ${what}`, {
        hint: 'the next call reconnects (a bounded number of times)',
        cause: e,
      });
    }
    if (e instanceof StreamableHTTPError && (e.code === 404 || e.code === 400)) {
      return new MurError('E-MCP-013', `MCP server '${name}' dropped the session during ${what} (HTTP ${e.code})`, {
        hint: 'the next call reconnects (a bounded number of times)',
        cause: e,
      });
    }
    if (e instanceof McpError) {
      return new MurError('E-MCP-012', `MCP server '${name}' answered ${what} with error ${e.code}: ${bounded(e.message)}`, { cause: e });
    }
    const msg = e instanceof Error ? e.message : String(e);
    const cause = (e as { cause?: { code?: string } })?.cause?.code;
    if (e instanceof TypeError && /fetch failed/.test(msg)) {
      return new MurError('E-MCP-009', `MCP server '${name}' cannot be reached at ${this.server.url}${cause ? ` (${cause})` : ''}`, {
        hint: 'the server is down or not listening there; the task goes on without this call',
        cause: e,
      });
    }
    if (this.server.command && (cause === 'ENOENT' || cause === 'EACCES' || (e as { code?: string }).code === 'ENOENT' || /spawn|EPIPE|closed/i.test(msg))) {
      const tail = this.stderr().trim().split('\n').slice(-3).join(' | ');
      return new MurError(
        'E-MCP-009',
        `MCP server '${name}' (${this.server.command[0]}) failed during ${what}: ${bounded(msg)}${tail ? `; its stderr: ${bounded(tail)}` : ''}`,
        { cause: e },
      );
    }
    if (e instanceof StreamableHTTPError) {
      return new MurError('E-MCP-009', `MCP server '${name}' refused ${what}: ${bounded(msg)}`, {
        hint: e.code === 401 || e.code === 403 ? 'check the credential named in token_env / headers_env' : 'check the server',
        cause: e,
      });
    }
    return new MurError('E-MCP-012', `MCP server '${name}' gave an invalid answer to ${what}: ${bounded(msg)}`, {
      hint: 'the server does not speak MCP as the SDK reads it',
      cause: e,
    });
  }

  private async drop(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    await c?.close().catch(() => {});
  }

  async close(): Promise<void> {
    await this.drop();
    for (const r of this.release.splice(0)) r();
  }
}

/** The server's error text is the server's: bounded before it reaches a message. */
function bounded(s: string): string {
  return s.length > 500 ? `${s.slice(0, 500)}…` : s;
}

/** Authorization and other headers from the variables the manifest names (E-MCP-007 when unset). */
export function credentialHeaders(s: McpServer, env: NodeJS.ProcessEnv): Record<string, string> {
  const read = (name: string, field: string): string => {
    const v = env[name];
    if (v === undefined || v === '') {
      throw new MurError('E-MCP-007', `MCP server '${s.name}': ${field} names ${name}, which is not set`, {
        hint: `set ${name} in the runtime's environment (on Kubernetes: from a Secret); the credential is never written in murmur.yaml`,
        location: { field },
      });
    }
    return v;
  };
  const headers: Record<string, string> = {};
  if (s.tokenEnv) headers.Authorization = `Bearer ${read(s.tokenEnv, 'token_env')}`;
  for (const [h, name] of Object.entries(s.headersEnv ?? {})) headers[h] = read(name, `headers_env.${h}`);
  return headers;
}
