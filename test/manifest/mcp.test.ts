import { describe, expect, it } from 'vitest';
import { parseManifest } from '../../runtime/manifest/capsule.ts';
import { errorAt, errorsOf } from './helpers.ts';

const base = (servers: string, allow = "['http://127.0.0.1:3001']"): string => `name: demo
version: 1.0.0
capabilities:
  network:
    allow: ${allow}
mcp:
  servers:
${servers}
`;

describe('manifest: the mcp block (MCP servers a capsule may use)', () => {
  it('reads mcp.servers with their tools, credentials by variable name, and defaults', () => {
    const m = parseManifest(
      base(`    - name: docs
      url: http://127.0.0.1:3001/mcp
      tools: [echo, get-sum]
      token_env: DOCS_TOKEN
      headers_env: {X-Api-Key: DOCS_KEY}`),
    );
    expect(m.mcp).toEqual({
      servers: [
        {
          name: 'docs',
          url: 'http://127.0.0.1:3001/mcp',
          tools: ['echo', 'get-sum'],
          tokenEnv: 'DOCS_TOKEN',
          headersEnv: { 'X-Api-Key': 'DOCS_KEY' },
          sampling: 'refuse',
          elicitation: 'input-required',
        },
      ],
    });
  });

  it('a capsule without the block is unchanged: no mcp key at all', () => {
    expect(parseManifest('name: demo\nversion: 1.0.0\n').mcp).toBeUndefined();
  });

  it('refuses a server url outside capabilities.network.allow, naming the field and the entry to add', () => {
    const list = errorsOf(base(`    - {name: docs, url: 'http://10.0.0.9:8080/mcp', tools: ['*']}`));
    const e = errorAt(list, 'mcp.servers[0].url');
    expect(e.code).toBe('E-MCP-003');
    expect(e.message).toContain("'http://10.0.0.9:8080/mcp' is not covered by capabilities.network.allow");
    expect(e.hint).toContain("'http://10.0.0.9:8080'");
    expect(e.location?.line).toBe(8);
  });

  it('refuses bad names, urls with credentials, duplicate servers, and * beside named tools', () => {
    const list = errorsOf(
      base(`    - {name: Docs_1, url: 'http://127.0.0.1:3001/mcp', tools: [echo]}
    - {name: dup, url: 'http://user:pw@127.0.0.1:3001/mcp', tools: [echo]}
    - {name: dup, url: 'ftp://127.0.0.1:3001/', tools: ['*', echo]}
    - {name: bad-tool, url: 'http://127.0.0.1:3001/mcp', tools: ['a.b', echo, echo]}`),
    );
    expect(errorAt(list, 'mcp.servers[0].name').code).toBe('E-MCP-001');
    expect(errorAt(list, 'mcp.servers[1].url').code).toBe('E-MCP-002');
    expect(errorAt(list, 'mcp.servers[1].url').message).not.toContain('pw');
    expect(errorAt(list, 'mcp.servers[2].name').code).toBe('E-MCP-005');
    expect(errorAt(list, 'mcp.servers[2].url').code).toBe('E-MCP-002');
    expect(errorAt(list, 'mcp.servers[2].tools').code).toBe('E-MCP-004');
    expect(errorAt(list, 'mcp.servers[3].tools[0]').code).toBe('E-MCP-004');
    expect(errorAt(list, 'mcp.servers[3].tools[2]').message).toContain('listed twice');
  });

  it('refuses credential keys that are not variable names, and headers the transport owns', () => {
    const list = errorsOf(
      base(`    - name: docs
      url: http://127.0.0.1:3001/mcp
      tools: ['*']
      token_env: 'sk-live-123'
      headers_env: {Authorization: TOKEN, X-Key: 'not a name'}`),
    );
    expect(errorAt(list, 'mcp.servers[0].token_env').code).toBe('E-MCP-006');
    expect(errorAt(list, 'mcp.servers[0].headers_env.Authorization').hint).toContain('token_env');
    expect(errorAt(list, 'mcp.servers[0].headers_env.X-Key').code).toBe('E-MCP-006');
  });

  it('a local server over stdio: command instead of url, its binary in capabilities.shell.allow', () => {
    const ok = parseManifest(
      `name: demo\nversion: 1.0.0\ncapabilities:\n  shell:\n    allow: [npx]\nmcp:\n  servers:\n    - {name: local, command: [npx, my-mcp-server, --stdio], tools: ['*']}\n`,
    );
    expect(ok.mcp!.servers[0]).toMatchObject({ name: 'local', command: ['npx', 'my-mcp-server', '--stdio'] });
    const list = errorsOf(
      base(`    - {name: a, command: [node, server.js], tools: ['*']}
    - {name: b, url: 'http://127.0.0.1:3001/mcp', command: [node], tools: ['*']}
    - {name: c, tools: ['*']}
    - {name: d, command: [node, ''], tools: ['*']}`),
    );
    const e = errorAt(list, 'mcp.servers[0].command[0]');
    expect(e.code).toBe('E-MCP-017');
    expect(e.hint).toContain("add 'node' to capabilities.shell.allow");
    expect(errorAt(list, 'mcp.servers[1].command').code).toBe('E-MCP-016');
    expect(errorAt(list, 'mcp.servers[2].url').message).toContain('gives neither url nor command');
    expect(errorAt(list, 'mcp.servers[3].command[1]').code).toBe('E-MCP-016');
  });

  it('requires url and a non-empty tools list, and knows the keys (did you mean)', () => {
    const list = errorsOf(base(`    - {name: docs, tool: [echo]}`));
    expect(list.errors.map((e) => e.location?.field)).toEqual(expect.arrayContaining(['mcp.servers[0].url', 'mcp.servers[0].tools', 'mcp.servers[0].tool']));
    expect(errorAt(list, 'mcp.servers[0].url').code).toBe('E-MCP-016');
    expect(errorsOf(base(`    - {name: docs, url: 'http://127.0.0.1:3001/mcp', tools: []}`)).format()).toContain("'mcp.servers[0].tools' is present but empty");
  });
});
