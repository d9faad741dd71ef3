/**
 * Builds the session's HookBus from the staged hooks: each hook's grant from the capsule's own
 * entry, on-stage dispatched before the session starts (it runs before the trace has events, so
 * its faults go to the hook log only), then the trace attached for every later event. The session
 * gets the bus behind the telemetry decorator (`hook_dispatch` spans once spans are attached).
 */
import { HookBus, busHookFrom } from '../hooks/index.ts';
import type { StagedCapsule } from '../session/stage.ts';
import { tracedHookPort } from '../telemetry/hooks.ts';
import type { TraceWriter } from '../trace/writer.ts';
import type { HookPort, HookServices } from '../hooks/port.ts';
import { compactionPrompt } from '../loop/capsule-session.ts';

export async function loadHookBus(
  staged: StagedCapsule,
  services: HookServices,
  trace: TraceWriter,
  hostEnv: NodeJS.ProcessEnv = process.env,
): Promise<HookPort> {
  const m = staged.manifest;
  const hooks = staged.hooks.map((h) => {
    const caps = m.artifacts.find((a) => a.name === h.name)?.capabilities;
    return busHookFrom(h, staged.workdir.dir, { hostEnv, taskIoRead: caps?.taskIo?.read === true, conversationRead: caps?.conversation?.read === true });
  });
  const bus = await HookBus.load({
    hooks,
    workdir: staged.workdir.dir,
    sessionId: staged.sessionId,
    services,
    seedOverflowMargin: m.context.seedOverflowMargin,
    compaction: { model: m.inference?.compaction.model, systemPrompt: compactionPrompt(staged) },
  });
  await bus.stage({ shellAllow: m.capabilities.shell?.allow ?? [] });
  bus.attachTrace(trace);
  return tracedHookPort(bus, trace);
}
