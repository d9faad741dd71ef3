/**
 * The `mcp:` block of a capsule manifest (this runtime's extension; docs/mcp.md): the MCP servers
 * a capsule may use and, per server, which of their tools. Value checks for the schema rows
 * (schema.ts) and the cross-field rules (unique names, tool lists, the URL inside
 * `capabilities.network.allow`), all with `E-MCP-*` codes.
 *
 * The keys are chosen so the operator can render them without the runtime: `url` is a destination
 * the Capsule's egress must admit (it must already lie inside `network.allow`), and `token_env` /
 * `headers_env` name environment variables a Secret fills — a credential is never written in
 * murmur.yaml itself.
 */
import { DEFAULT_PORT, allowsDestination, type Destination } from '../contracts/network-grant.ts';
import type { Problem } from './checks.ts';

export const MCP_SAMPLING = ['refuse', 'driver'] as const;
export const MCP_ELICITATION = ['refuse', 'input-required'] as const;

export interface McpServer {
  name: string;
  /** Streamable HTTP endpoint (exactly one of `url` and `command`). */
  url?: string;
  /** A local server over stdio: the binary (in `capabilities.shell.allow`) and its arguments. */
  command?: string[];
  /** `['*']` = every tool the server lists; else exactly these. */
  tools: string[];
  /** Environment variable holding a bearer token (sent as `Authorization: Bearer …`). */
  tokenEnv?: string;
  /** Header name → environment variable holding its value. */
  headersEnv: Record<string, string>;
  sampling: (typeof MCP_SAMPLING)[number];
  elicitation: (typeof MCP_ELICITATION)[number];
}

export interface McpConfig {
  servers: McpServer[];
}

/*
 * The rules of a server entry that the Capsule CRD's admission (operator/crd/mcp.ts) applies too:
 * it imports these, so the API server refuses what this validator would refuse at start, by the
 * same names, lengths and header list.
 */
/** Longest server name: it prefixes every tool name the model sees (`mcp__<server>__<tool>`). */
export const MCP_SERVER_NAME_MAX = 20;
/** Longest tool name every provider admits (Anthropic and OpenAI). */
export const MCP_TOOL_NAME_MAX = 64;
/** Server names are short lowercase words: `[a-z0-9-]`, a letter or digit at each end. */
export const MCP_SERVER_NAME_RE = new RegExp(`^[a-z0-9]([a-z0-9-]{0,${MCP_SERVER_NAME_MAX - 2}}[a-z0-9])?$`);
/** The characters every provider admits in a tool name (Anthropic and OpenAI: `[A-Za-z0-9_-]`). */
export const MCP_TOOL_NAME_RE = new RegExp(`^[A-Za-z0-9_-]{1,${MCP_TOOL_NAME_MAX}}$`);
/** An HTTP header name: RFC 9110's token. */
export const MCP_HEADER_NAME_RE = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;
/**
 * Header names (lower case) a server entry cannot set: `authorization` (the token's, from
 * `token_env`) and the headers the Streamable HTTP transport sets itself.
 */
export const MCP_UNSETTABLE_HEADERS: readonly string[] = [
  'authorization',
  'host',
  'content-type',
  'content-length',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'connection',
  'transfer-encoding',
];
const UNSETTABLE = new Set(MCP_UNSETTABLE_HEADERS);

export function checkMcpServerName(v: string): Problem | undefined {
  if (MCP_SERVER_NAME_RE.test(v)) return undefined;
  return {
    code: 'E-MCP-001',
    message: `invalid MCP server name '${v}'`,
    hint: `use 1-${MCP_SERVER_NAME_MAX} lowercase letters, digits and dashes, starting and ending with a letter or digit (e.g. docs-search); it prefixes the tool names the model sees`,
  };
}

export function checkMcpUrl(v: string): Problem | undefined {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return {
      code: 'E-MCP-002',
      message: `invalid MCP server url '${v}'`,
      hint: "give the server's Streamable HTTP endpoint as an absolute http(s) URL, e.g. 'https://mcp.example.com/mcp'",
    };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    return {
      code: 'E-MCP-002',
      message: `invalid MCP server url '${v}': scheme '${u.protocol.slice(0, -1)}' is not http or https`,
      hint: 'MCP servers are reached over Streamable HTTP: use an http:// or https:// URL',
    };
  }
  if (u.username || u.password) {
    return {
      code: 'E-MCP-002',
      message: 'invalid MCP server url: it carries credentials',
      hint: 'remove the user:password part; put the token in a Secret and name its variable in `token_env`',
    };
  }
  return undefined;
}

export function checkMcpToolEntry(v: string): Problem | undefined {
  if (v === '*' || MCP_TOOL_NAME_RE.test(v)) return undefined;
  return {
    code: 'E-MCP-004',
    message: `invalid MCP tool name '${v}'`,
    hint: `give the tool's name as the server lists it (letters, digits, '_' and '-', at most ${MCP_TOOL_NAME_MAX}), or '*' alone for every tool`,
  };
}

export function checkMcpCommandWord(v: string): Problem | undefined {
  if (v !== '' && !v.includes('\0')) return undefined;
  return {
    code: 'E-MCP-016',
    message: 'an empty word in an MCP server command',
    hint: 'give the binary and its arguments as a list of non-empty strings, e.g. [npx, my-mcp-server, --stdio]',
  };
}

export function checkMcpHeaderName(v: string): Problem | undefined {
  if (!MCP_HEADER_NAME_RE.test(v)) {
    return { code: 'E-MCP-006', message: `invalid header name '${v}' in headers_env`, hint: 'give an HTTP header name such as X-Api-Key' };
  }
  if (UNSETTABLE.has(v.toLowerCase())) {
    return {
      code: 'E-MCP-006',
      message: `header '${v}' cannot be set in headers_env`,
      hint:
        v.toLowerCase() === 'authorization'
          ? 'name the token variable in `token_env`: it is sent as `Authorization: Bearer <token>`'
          : 'the MCP transport sets this header itself',
    };
  }
  return undefined;
}

export function checkMcpEnvName(v: string): Problem | undefined {
  if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(v)) return undefined;
  return {
    code: 'E-MCP-006',
    message: `invalid environment variable name '${v}'`,
    hint: "name the variable holding the credential, e.g. 'DOCS_MCP_TOKEN' (letters, digits, '_'; not starting with a digit); never the credential itself",
  };
}

/** The destination an MCP url connects to (the same reading runtime/net gives a request URL). */
function destinationOf(url: string): Destination {
  const u = new URL(url);
  const scheme = u.protocol.slice(0, -1) as keyof typeof DEFAULT_PORT;
  return { scheme, host: u.hostname.toLowerCase().replace(/^\[|\]$/g, ''), port: u.port ? Number(u.port) : DEFAULT_PORT[scheme] };
}

type Add = (code: string, field: string, message: string, hint: string) => void;

/**
 * Cross-field rules of `mcp.servers`: unique names, `*` alone, no repeated tool, and every URL
 * inside `capabilities.network.allow` (an MCP connection is an outgoing request like any other).
 */
export function mcpChecks(
  mcp: { servers?: unknown } | undefined,
  allow: readonly unknown[],
  shellAllow: readonly unknown[],
  add: Add,
  given: (field: string) => boolean,
): void {
  const servers = Array.isArray(mcp?.servers) ? (mcp!.servers as (Partial<McpServer> | undefined)[]) : [];
  const grants = allow.filter((e): e is string => typeof e === 'string');
  const seen = new Map<string, number>();
  servers.forEach((s, i) => {
    if (!s || typeof s !== 'object') return;
    const base = `mcp.servers[${i}]`;
    if (typeof s.name === 'string') {
      const first = seen.get(s.name);
      if (first !== undefined)
        add('E-MCP-005', `${base}.name`, `duplicate MCP server name '${s.name}' (first declared at mcp.servers[${first}])`, 'give every server a unique name');
      else seen.set(s.name, i);
    }
    // By the keys written, not the values kept: an invalid url has its own error already.
    const hasUrl = given(`${base}.url`);
    const hasCommand = given(`${base}.command`);
    if (hasUrl === hasCommand) {
      add(
        'E-MCP-016',
        `${base}.${hasUrl ? 'command' : 'url'}`,
        hasUrl ? `MCP server '${String(s.name)}' gives both url and command` : `MCP server '${String(s.name)}' gives neither url nor command`,
        'give `url:` (a Streamable HTTP endpoint) or `command:` (a local server over stdio, its binary in capabilities.shell.allow), not both',
      );
    }
    const bin = Array.isArray(s.command) ? s.command[0] : undefined;
    if (typeof bin === 'string' && bin !== '' && !shellAllow.includes(bin)) {
      add(
        'E-MCP-017',
        `${base}.command[0]`,
        `MCP server '${String(s.name)}' runs '${bin}', which is not in capabilities.shell.allow`,
        `a local MCP server is allowed the way a shell binary is: add '${bin}' to capabilities.shell.allow, or use a url`,
      );
    }
    if (typeof s.url === 'string' && checkMcpUrl(s.url) === undefined) {
      if (!allowsDestination(grants, destinationOf(s.url))) {
        const u = new URL(s.url);
        add(
          'E-MCP-003',
          `${base}.url`,
          `MCP server '${String(s.name)}' url '${s.url}' is not covered by capabilities.network.allow`,
          `add '${u.protocol}//${u.host}' (or '${u.host}') to capabilities.network.allow: an MCP connection is an outgoing request like any other`,
        );
      }
    }
    // A string-map row has no value check of its own: each header and variable name is checked here.
    for (const [h, env] of Object.entries(s.headersEnv ?? {})) {
      const p = checkMcpHeaderName(h) ?? checkMcpEnvName(env);
      if (p) add(p.code, `${base}.headers_env.${h}`, p.message, p.hint);
    }
    const tools = Array.isArray(s.tools) ? s.tools : [];
    if (tools.includes('*') && tools.length > 1) {
      add(
        'E-MCP-004',
        `${base}.tools`,
        `MCP server '${String(s.name)}' lists '*' beside named tools`,
        "write `tools: ['*']` for every tool, or list the tools by name",
      );
    }
    const named = new Set<string>();
    tools.forEach((t, j) => {
      if (typeof t !== 'string') return;
      if (named.has(t)) add('E-MCP-004', `${base}.tools[${j}]`, `MCP tool '${t}' is listed twice for server '${String(s.name)}'`, 'list each tool once');
      named.add(t);
    });
  });
}
