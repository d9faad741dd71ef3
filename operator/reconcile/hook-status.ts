/**
 * Status of a Hook: whether its contract is accepted (the hook commit table, the same check staging
 * and the CRD's admission rule make; a Hook stored before a stricter CRD can fail it) and which
 * Capsules use it. `sameHookStatus` ignores transition times, so an unchanged status is never written.
 */
import type { Condition, Hook, HookStatus } from '../api/types.ts';
import { stableJson } from '../translate/builders/common.ts';
import { checkHookContract } from '../../runtime/contracts/commit-table.ts';

/** usedBy lists at most this many names (usedByCount has them all): status stays small. */
export const HOOK_USED_BY_MAX = 50;

export function computeHookStatus(hook: Hook, usedBy: string[], now: string): HookStatus {
  const gen = hook.metadata.generation ?? 0;
  const names = [...new Set(usedBy)].sort();
  const violation = checkHookContract(hook.spec);
  const shown = names.slice(0, HOOK_USED_BY_MAX);
  const more = names.length > shown.length ? ` and ${names.length - shown.length} more` : '';
  const conds: Omit<Condition, 'lastTransitionTime'>[] = [
    violation
      ? { type: 'Accepted', status: 'False', reason: 'InvalidContract', message: `spec.${violation.field}: ${violation.message}` }
      : {
          type: 'Accepted',
          status: 'True',
          reason: 'ContractValid',
          message: `binding ${hook.spec.binding ?? '(every session event)'}, ${hook.spec.execution_mode ?? 'blocking'}, commit_policy ${hook.spec.commit_policy ?? 'none'}`,
        },
    names.length
      ? {
          type: 'InUse',
          status: 'True',
          reason: 'Referenced',
          message: `used by ${names.length} Capsule${names.length === 1 ? '' : 's'}: ${shown.join(', ')}${more}`,
        }
      : {
          type: 'InUse',
          status: 'False',
          reason: 'Unreferenced',
          message: `no Capsule in namespace '${hook.metadata.namespace ?? 'default'}' lists this Hook in spec.hooks`,
        },
  ];
  const prev = hook.status?.conditions ?? [];
  return {
    observedGeneration: gen,
    conditions: conds.map((c) => {
      const p = prev.find((x) => x.type === c.type);
      return { ...c, observedGeneration: gen, lastTransitionTime: p && p.status === c.status ? p.lastTransitionTime : now };
    }),
    usedBy: shown,
    usedByCount: names.length,
  };
}

const strip = (s: HookStatus = {}) =>
  stableJson({
    ...s,
    conditions: (s.conditions ?? []).map(({ lastTransitionTime: _t, ...c }) => c).sort((a, b) => a.type.localeCompare(b.type)),
  });

export function sameHookStatus(a: HookStatus | undefined, b: HookStatus | undefined): boolean {
  return strip(a) === strip(b);
}
