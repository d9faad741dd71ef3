/**
 * CEL admission rules for the Hook CRD, rendered from the ONE commit table
 * (runtime/contracts/commit-table.ts). Each rule reproduces one branch of `checkHookContract()` with
 * a `messageExpression` that builds the very same message, and the rules exclude each other in
 * the order `checkHookContract()` checks them, so a bad Hook is refused with exactly one message:
 * the one staging would give.
 */
import { COMMIT_TABLE, HANDLERS, POLICIES_REQUIRING_BINDING, type Handler } from '../../runtime/contracts/commit-table.ts';
import type { Validation } from './schema.ts';

const q = (s: string): string => `'${s}'`;
const list = (xs: readonly string[]): string => `[${xs.map(q).join(', ')}]`;

/** Declared policy and mode with the manifest defaults applied (`none`, `blocking`). */
const P = "(has(self.commit_policy) ? self.commit_policy : 'none')";
const M = "(has(self.execution_mode) ? self.execution_mode : 'blocking')";

/** CEL map literal binding → the policy that binding honors. */
export function policyMapLiteral(): string {
  return `{${HANDLERS.map((h) => `${q(h)}: ${q(COMMIT_TABLE[h].policy)}`).join(', ')}}`;
}

const syncOnly: readonly Handler[] = HANDLERS.filter((h) => !COMMIT_TABLE[h].asyncAllowed);

/** The four violation predicates, in `checkHookContract()` order. */
export const VIOLATIONS = {
  unboundPolicy: `!has(self.binding) && ${P} in ${list(POLICIES_REQUIRING_BINDING)}`,
  policyForBinding: `has(self.binding) && ${P} != 'none' && ${P} != ${policyMapLiteral()}[self.binding]`,
  asyncBinding: `has(self.binding) && ${M} == 'async' && self.binding in ${list(syncOnly)}`,
  asyncPolicy: `${M} == 'async' && ${P} != 'none'`,
} as const;

const V = VIOLATIONS;

/** `x-kubernetes-validations` for `Hook.spec`. */
export function hookContractRules(): Validation[] {
  return [
    {
      rule: `!(${V.unboundPolicy})`,
      messageExpression: `"commit_policy '" + ${P} + "' requires an explicit binding of 'on-shell' or 'on-tool-call'; a hook with no binding receives every event and cannot deny"`,
      fieldPath: '.commit_policy',
      reason: 'FieldValueInvalid',
    },
    {
      rule: `!(${V.policyForBinding})`,
      messageExpression: `"commit_policy '" + ${P} + "' is not valid for binding '" + self.binding + "'; binding '" + self.binding + "' honors commit_policy '" + ${policyMapLiteral()}[self.binding] + "'"`,
      fieldPath: '.commit_policy',
      reason: 'FieldValueInvalid',
    },
    {
      rule: `!(${V.asyncBinding}) || (${V.policyForBinding})`,
      messageExpression: `"execution_mode 'async' is not valid for binding '" + self.binding + "'; binding '" + self.binding + "' is always blocking"`,
      fieldPath: '.execution_mode',
      reason: 'FieldValueInvalid',
    },
    {
      rule: `!(${V.asyncPolicy}) || (${V.unboundPolicy}) || (${V.policyForBinding}) || (${V.asyncBinding})`,
      messageExpression: `"execution_mode 'async' requires commit_policy 'none' (declared '" + ${P} + "'); a hook that commits an arm must be blocking"`,
      fieldPath: '.execution_mode',
      reason: 'FieldValueInvalid',
    },
  ];
}
