/**
 * MCP servers for the tests: the reference `@modelcontextprotocol/server-everything` (npm, written
 * by the MCP project) started as a child process over Streamable HTTP on loopback, and hostile
 * servers of our own built with the SDK's own server classes (McpServer +
 * StreamableHTTPServerTransport on a real node:http server).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface RunningServer {
  url: string;
  port: number;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

const require = createRequire(import.meta.url);

/** server-everything's Streamable HTTP transport on `port` (default: a free one); resolves once it listens. */
export async function startEverything(at?: number): Promise<RunningServer & { child: ChildProcess }> {
  const pkg = dirname(require.resolve('@modelcontextprotocol/server-everything/package.json'));
  const port = at ?? (await freePort());
  const child = spawn(process.execPath, [join(pkg, 'dist', 'index.js'), 'streamableHttp'], {
    env: { PATH: process.env.PATH, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes(`listening on port ${port}`)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited (${code}): ${err}`)));
  });
  return {
    child,
    port,
    url: `http://127.0.0.1:${port}/mcp`,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    },
  };
}

/**
 * An MCP server of our own over Streamable HTTP (stateful sessions, JSON responses), set up by
 * `setup` on a fresh McpServer per session. `intercept` may answer a request itself first (garbage,
 * a dropped session).
 */
export async function startSdkServer(
  setup: (s: McpServer) => void,
  o: { intercept?: (req: IncomingMessage, res: ServerResponse, body: unknown) => boolean; json?: boolean } = {},
): Promise<RunningServer & { sessions: Map<string, StreamableHTTPServerTransport>; requests: IncomingMessage[] }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const requests: IncomingMessage[] = [];
  const server = http.createServer(async (req, res) => {
    requests.push(req);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString();
    const body: unknown = text ? JSON.parse(text) : undefined;
    if (o.intercept?.(req, res, body)) return;
    const sid = req.headers['mcp-session-id'] as string | undefined;
    let t = sid ? sessions.get(sid) : undefined;
    if (!t) {
      if (sid) {
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
        return;
      }
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: o.json ?? true,
        onsessioninitialized: (id) => void sessions.set(id, transport),
      });
      const mcp = new McpServer({ name: 'hostile', version: '1.0.0' });
      setup(mcp);
      await mcp.connect(transport);
      t = transport;
    }
    await t.handleRequest(req, res, body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}/mcp`,
    sessions,
    requests,
    async stop() {
      for (const t of sessions.values()) await t.close().catch(() => {});
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
