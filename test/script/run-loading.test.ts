/**
 * What `mur run` of a script capsule loads: the run command, then (a dynamic import on the script
 * path) the script session — and neither the agent loop nor the MCP client (its SDK and zod) unless
 * the capsule names MCP servers. Read from esbuild's metafile of both modules split at their dynamic
 * imports: the static closure of an entry is what evaluating it loads (as test/a2a/client-loading).
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { esbuildMetafile } from '../cli/start-packages.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RUN = 'runtime/cli/run-command.ts';
const SCRIPT = 'runtime/script/script-session.ts';

/** The modules and packages evaluating `entries` loads (their static imports), and those reached only through a dynamic import. */
async function closure(entries: string[]): Promise<{ modules: Set<string>; packages: Set<string>; later: Set<string> }> {
  const outs = (await esbuildMetafile(entries, { split: true, cwd: ROOT })).outputs;
  const modules = new Set<string>();
  const packages = new Set<string>();
  const seen = new Set<string>();
  const walk = (o: string): void => {
    if (seen.has(o)) return;
    seen.add(o);
    for (const i of Object.keys(outs[o]!.inputs)) modules.add(i);
    for (const i of outs[o]!.imports) {
      if (i.kind !== 'import-statement') continue;
      if (i.external) packages.add(i.path);
      else walk(i.path);
    }
  };
  for (const e of entries) walk(Object.keys(outs).find((o) => outs[o]!.entryPoint === e)!);
  const later = new Set<string>();
  for (const [o, out] of Object.entries(outs)) if (!seen.has(o)) for (const i of Object.keys(out.inputs)) later.add(i);
  return { modules, packages, later };
}

describe('mur run of a script capsule', () => {
  it('loads neither the agent loop nor the MCP client; a capsule naming MCP servers loads the client then', async () => {
    const { modules, packages, later } = await closure([RUN, SCRIPT]);
    expect(modules.has('runtime/script/script-session.ts')).toBe(true);
    expect(modules.has('runtime/session/stage.ts')).toBe(true);
    expect([...packages].filter((p) => p.startsWith('@modelcontextprotocol/') || p === 'zod')).toEqual([]);
    const agent = ['runtime/loop/capsule-session.ts', 'runtime/loop/agent-loop.ts', 'runtime/compose/open.ts'];
    expect([...modules].filter((m) => agent.includes(m) || m.startsWith('runtime/mcp/') || m.startsWith('runtime/hooks/'))).toEqual([]);
    expect(later.has('runtime/mcp/tools.ts')).toBe(true);
    expect(later.has('runtime/loop/capsule-session.ts')).toBe(true);
  });
});
