/**
 * The commit rule of one returned arm (docs/hooks.md, the commit table): committed only when the
 * handler commits that arm at this dispatch and the hook declares the arm's commit policy.
 */
import { COMMIT_TABLE, isCommitted, type Arm, type Handler } from '../contracts/commit-table.ts';
import type { Hook } from './hook.ts';

/** Did the runtime commit `arm` returned by `h` at `handler`? Otherwise says why not. */
export function uncommittedReason(h: Hook, handler: Handler, arm: Arm, atDecisionPoint: boolean): string | undefined {
  if (arm === 'none') return undefined;
  if (!isCommitted(handler, arm, atDecisionPoint)) {
    if (COMMIT_TABLE[handler].committedArm === arm)
      return `${handler} returned arm '${arm}' at the observation dispatch (the call already ran), which commits nothing; discarded`;
    const honored = COMMIT_TABLE[handler].committedArm;
    return `${handler} returned arm '${arm}', which ${handler} does not commit (${honored === 'none' ? 'it commits no arm' : `it commits only '${honored}'`}); discarded`;
  }
  // An arm with a policy spelling (all but `artifact`, whose handler's policy is `none`) is
  // committed only for a hook declaring that policy.
  const policy = COMMIT_TABLE[handler].policy;
  if (policy !== 'none' && h.spec.commitPolicy !== policy) {
    return `${handler} returned arm '${arm}', but the hook declares commit_policy '${h.spec.commitPolicy}'; discarded`;
  }
  return undefined;
}
