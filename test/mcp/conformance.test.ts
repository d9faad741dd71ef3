/**
 * The MCP conformance suite (`@modelcontextprotocol/conformance`, npm) runs its client scenarios
 * against the runtime's MCP client (test/mcp/conformance/client.ts: McpTools over the SDK, through
 * the guarded fetch). Each scenario starts its own test server, runs the client with the server's
 * URL, and checks what the client did on the wire. The OAuth scenarios (`auth/*`) are not run: the
 * runtime sends a bearer token from a Secret and runs no OAuth flow (docs/mcp.md).
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tmp } from '../registry/helpers.ts';

const require = createRequire(import.meta.url);
const SUITE = require.resolve('@modelcontextprotocol/conformance/package.json').replace(/package\.json$/, 'dist/index.js');
const TSX = pathToFileURL(require.resolve('tsx')).href;
const CLIENT = fileURLToPath(new URL('./conformance/client.ts', import.meta.url));
// Node 20 lacks fs.globSync, which the suite imports (for tier-check only): a resolve hook shims it.
const NODE20 = fileURLToPath(new URL('./conformance/node20.mjs', import.meta.url));

/** Runs one client scenario; resolves with the suite's output once it exits. */
function scenario(name: string): Promise<{ code: number | null; out: string }> {
  const child = spawn(
    process.execPath,
    ['--import', NODE20, SUITE, 'client', '--command', `${process.execPath} --import ${TSX} ${CLIENT}`, '--scenario', name],
    {
      cwd: tmp('mcp-conformance-'),
      env: { PATH: process.env.PATH, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, out })));
}

/** The client scenarios of the suite the runtime's client passes (docs/mcp.md lists them). */
const PASSING = ['initialize', 'tools_call', 'elicitation-sep1034-client-defaults', 'sse-retry'];

describe('MCP conformance suite, client scenarios, against the runtime’s MCP client', () => {
  for (const name of PASSING) {
    it(`${name} passes`, async () => {
      const r = await scenario(name);
      expect(r.out, r.out).toMatch(/OVERALL: PASSED/);
      expect(r.out).toMatch(/Passed: (\d+)\/\1, 0 failed/);
      expect(r.out).not.toMatch(/CLIENT EXITED WITH ERROR/);
    });
  }
});
