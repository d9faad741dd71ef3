/**
 * MCP tools for a script capsule: its component calls them through `murmur:tool-registry/invoke`
 * by the same names the model would see (`mcp__<server>__<tool>`), like any declared tool. The
 * servers are connected as the session opens (runtime/mcp); an elicitation becomes the task's
 * `request-input`; sampling is refused (a script capsule has no driver).
 */
import type { McpRuntimeTool, McpTools } from '../mcp/index.ts';
import type { StagedCapsule } from '../session/stage.ts';
import type { HostTask, WitToolResult } from './host-records.ts';

export function openScriptMcp(
  staged: StagedCapsule,
  env: NodeJS.ProcessEnv,
  taken: ReadonlySet<string>,
  task: () => HostTask | undefined,
  workdir = staged.workdir.dir,
): Promise<McpTools> | undefined {
  // The MCP client (its SDK and zod: ≈ 11 MiB of RSS, measured) is loaded only for a capsule that
  // names servers: a script capsule's one-shot `mur run` without any does not carry it.
  if (!staged.manifest.mcp?.servers.length) return undefined;
  return import('../mcp/index.ts').then(({ McpTools, elicitationPrompt, elicitationResult }) => {
    // No driver to sample with: `sampling: driver` has nothing to run here, and is refused.
    const m = { ...staged.manifest, mcp: staged.manifest.mcp && { servers: staged.manifest.mcp.servers.map((s) => ({ ...s, sampling: 'refuse' as const })) } };
    return McpTools.forManifest(m, {
      env,
      taken,
      workdir,
      requests: {
        elicit: async (server, params) => {
          const ask = task()?.io?.requestInput;
          if (!ask) return { action: 'decline' };
          return elicitationResult(params, await ask(elicitationPrompt(server, params)));
        },
      },
    })!;
  });
}

/**
 * One invoke of an MCP tool: the tool-result record the component gets (`passed`, or `error` with
 * the E-MCP error text as data), and the fields of its `tool_call` trace event.
 */
export async function invokeMcp(
  tool: McpRuntimeTool,
  data: string | undefined,
  signal: AbortSignal,
): Promise<{ result: WitToolResult; event: Record<string, unknown> }> {
  let input: Record<string, unknown> = {};
  if (data !== undefined && data !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      parsed = undefined;
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
      const why = `MCP tool '${tool.spec.name}' takes a JSON object as its input`;
      return {
        result: { status: 'error', summary: why, data: undefined, dataPath: undefined, truncated: false, metadata: [] },
        event: { output_bytes: 0, status: 'error', error: why },
      };
    }
    input = parsed as Record<string, unknown>;
  }
  const r = await tool.run(input, signal);
  const status = r.isError ? 'error' : 'passed';
  return {
    result: { status, summary: undefined, data: r.content, dataPath: undefined, truncated: false, metadata: [] },
    event: { output_bytes: Buffer.byteLength(r.content), status: r.isError ? 'error' : 'ok', tool_status: status, kind: 'mcp' },
  };
}
