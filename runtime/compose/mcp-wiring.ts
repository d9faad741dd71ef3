/**
 * Wires a session to the MCP servers its manifest names (docs/mcp.md): connects them before the
 * session opens (the inventory needs their tools), hands their tools to the loop as runtime tools,
 * and maps what a server asks of the client onto the running task: an elicitation becomes the
 * task's `input-required` (answered over A2A), a progress notification a status message on the
 * task's stream, a sampling request one call of the capsule's own driver against its spend ceiling
 * (`sampling: driver`). What the manifest refuses is refused with the protocol's error: the client
 * does not declare the capability, and the SDK answers "method not found".
 */
import type { McpTools, ServerRequests } from '../mcp/index.ts';
import type { CapsuleSession, TaskSink } from '../loop/capsule-session.ts';
import type { StagedCapsule } from '../session/stage.ts';

/** Every tool name the capsule has besides its MCP tools: an MCP tool never takes one. */
function otherToolNames(staged: StagedCapsule): Set<string> {
  const m = staged.manifest;
  return new Set([
    ...staged.artifacts.filter((a) => a.manifest.runtime === 'tool').map((a) => a.name),
    ...(m.capabilities.shell?.allow ?? []),
    'delegate-task',
  ]);
}

type McpModule = typeof import('../mcp/index.ts');

export async function openMcpTools(staged: StagedCapsule, env: NodeJS.ProcessEnv, session: () => CapsuleSession | undefined): Promise<McpTools | undefined> {
  if (!staged.manifest.mcp?.servers.length) return undefined;
  // Loaded only for a capsule that names MCP servers: the MCP SDK with zod and ajv is ≈ 0.5 MB of
  // source and ≈ 3 MiB of the main heap, held for the life of every serving process that loads it.
  const mcp = await import('../mcp/index.ts');
  return mcp.McpTools.forManifest(staged.manifest, { env, taken: otherToolNames(staged), requests: serverRequests(session, mcp), workdir: staged.workdir.dir });
}

function serverRequests(session: () => CapsuleSession | undefined, { elicitationPrompt, elicitationResult }: McpModule): ServerRequests {
  const io = () => session()?.components.io as Partial<TaskSink> | undefined;
  return {
    elicit: async (server, params) => {
      const ask = io()?.requestInput;
      // Outside an A2A task nobody can answer: declined, so the server's tool goes on without it.
      if (!ask) return { action: 'decline' };
      const answer = await ask(elicitationPrompt(server, params));
      return elicitationResult(params, answer);
    },
    sample: async (server, params) => {
      const s = session();
      if (!s) throw new Error('no session');
      // The server's messages are its own text: they go to the capsule's driver as the request's
      // messages, never into the task's conversation. Images and audio are named, not sent.
      const messages = params.messages.map((m) => ({ role: m.role, content: samplingText(m.content) }));
      const r = await s.samplingInference({ messages, ...(params.systemPrompt ? { systemPrompt: params.systemPrompt } : {}) }, server);
      return { role: 'assistant' as const, content: { type: 'text' as const, text: r.text }, model: r.modelUsed, stopReason: 'endTurn' };
    },
    progress: (server, tool, p) => {
      const total = p.total !== undefined ? `/${p.total}` : '';
      io()?.status?.(`MCP ${server}/${tool}: ${p.progress}${total}${p.message ? ` ${p.message.slice(0, 200)}` : ''}`);
    },
  };
}

function samplingText(content: unknown): string {
  const blocks = (Array.isArray(content) ? content : [content]) as Array<{ type?: string; text?: string; mimeType?: string }>;
  return blocks
    .map((b) => (b?.type === 'text' && typeof b.text === 'string' ? b.text : `[${String(b?.type)} ${String(b?.mimeType ?? '')} not shown]`))
    .join('\n');
}
