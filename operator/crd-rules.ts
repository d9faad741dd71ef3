/** The Hook CRD's CEL rules, rendered from the commit table (see operator/crd/rules.ts). */
export { hookContractRules, VIOLATIONS, policyMapLiteral } from './crd/rules.ts';
