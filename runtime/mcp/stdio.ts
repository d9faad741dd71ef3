/**
 * A local MCP server over stdio (`mcp.servers[].command`), started the way the shell tool starts a
 * binary: the binary must be in `capabilities.shell.allow` (checked at validation and here), is
 * resolved on PATH with the same rule (no relative PATH entries), and runs in the session workdir
 * with the shell tool's environment (credential-shaped names and `shell.strip_env` stripped; only
 * the variables named by the server's `token_env` / `headers_env` are added). It is a process of
 * the shell's trust: the network allowlist, which fences requests the runtime makes, does not fence
 * what such a process does, exactly as for any allowed shell binary.
 */
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { MurError } from '../errors.ts';
import type { McpServer } from '../manifest/mcp.ts';
import { isShellAllowed, resolveBinary, shellEnv } from '../shell/index.ts';

export interface StdioOptions {
  env: NodeJS.ProcessEnv;
  workdir: string;
  shellAllow: readonly string[];
  stripEnv?: readonly string[];
}

/** The last bytes of the server's stderr kept for an error message. */
const STDERR_TAIL = 2048;

export async function stdioTransport(s: McpServer, o: StdioOptions): Promise<{ transport: StdioClientTransport; stderr: () => string }> {
  const [bin, ...args] = s.command!;
  if (!isShellAllowed(bin!, o.shellAllow)) {
    throw new MurError('E-MCP-017', `MCP server '${s.name}' runs '${bin}', which is not in capabilities.shell.allow`, {
      hint: 'a local MCP server is allowed the way a shell binary is',
    });
  }
  const r = await resolveBinary(bin!, { pathVar: o.env.PATH, cwd: o.workdir });
  if (!r.resolved) {
    throw new MurError('E-MCP-009', `MCP server '${s.name}' cannot be started: '${bin}' is not found on PATH`, {
      hint: 'install it, or fix mcp.servers[].command',
    });
  }
  const { env } = shellEnv({ env: o.env, stripEnvGlobs: o.stripEnv, home: o.workdir, cwd: o.workdir });
  // The credentials the manifest names for this server are its own: they pass, the rest is stripped.
  for (const name of [s.tokenEnv, ...Object.values(s.headersEnv ?? {})]) if (name && o.env[name] !== undefined) env[name] = o.env[name]!;
  const transport = new StdioClientTransport({ command: r.binary, args, env, cwd: o.workdir, stderr: 'pipe' });
  let tail = '';
  // Drained so a chatty server never blocks on a full pipe; the tail explains a crash.
  transport.stderr?.on('data', (d: Buffer) => {
    tail = (tail + d.toString()).slice(-STDERR_TAIL);
  });
  return { transport, stderr: () => tail };
}
