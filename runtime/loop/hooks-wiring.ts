/** Builds the session's HookBus from the staged hooks (replaced when the bus lands). */
import type { StagedCapsule } from '../session/stage.ts';
import type { HookPort } from './hook-port.ts';
import type { HookServices } from './session.ts';
import { MurError } from '../errors.ts';

export async function loadHookBus(staged: StagedCapsule, _services: HookServices): Promise<HookPort> {
  throw new MurError('E-HOOK-100', `${staged.hooks.length} hook(s) declared but hook dispatch is not wired yet`);
}
