/**
 * Stage a capsule and open its session: the one path `mur run`, `mur serve` and the tests share.
 */
import type { ConversationStore } from '../inference/conversation-store.ts';
import type { StagedCapsule } from '../session/stage.ts';
import { CapsuleSession, type SessionOptions } from '../loop/capsule-session.ts';
import { runtimeToolsFor } from './a2a-bridge.ts';
import { loadHookBus } from './hooks-wiring.ts';
import { openMcpTools } from './mcp-wiring.ts';

export { defaultRegistry, defaultWorkRoot, stage, type OpenOptions } from './stage.ts';

export async function openSession(
  staged: StagedCapsule,
  o: { hostEnv?: NodeJS.ProcessEnv; conversations?: ConversationStore; deferWarmUp?: boolean } = {},
): Promise<CapsuleSession> {
  let session: CapsuleSession | undefined;
  // MCP servers are connected first: their tools are part of the inventory the session opens with.
  const mcp = await openMcpTools(staged, o.hostEnv ?? process.env, () => session);
  const runtimeTools = (s: CapsuleSession) => {
    if (!mcp) return runtimeToolsFor(s);
    mcp.attach(s.trace);
    return [...runtimeToolsFor(s), ...mcp.tools()];
  };
  const opts: SessionOptions = {
    hostEnv: o.hostEnv,
    runtimeTools,
    ...(o.conversations ? { conversations: o.conversations } : {}),
    ...(o.deferWarmUp ? { deferWarmUp: true } : {}),
  };
  if (staged.hooks.length) opts.hooks = (services, trace) => loadHookBus(staged, services, trace, o.hostEnv);
  try {
    session = await CapsuleSession.open(staged, opts);
  } catch (e) {
    await mcp?.close();
    throw e;
  }
  if (mcp) session.onClose(() => mcp.close());
  return session;
}
