/**
 * CEL admission rules for the values the runtime's manifest validator checks (runtime/manifest/
 * checks.ts), so `kubectl apply` refuses what the runtime would refuse at start, at the field and
 * list index the API server names, with the fix in the message and the code E-OP-011.
 *
 * Why CEL and not a validating webhook running the runtime's validator: CEL runs inside the API
 * server, so there is no webhook Deployment, no certificates to rotate, no failurePolicy to choose
 * between "refuse everything while the operator is down" and "admit anything"; and it is checked
 * by `kubectl apply --dry-run=server` and by GitOps tools without the operator. The cost is that the
 * rules restate the runtime's grammar: they are built here from the runtime's own regexes (NAME_RE,
 * and for network.allow the fragments of runtime/contracts/network-grant.ts, the one grammar of an
 * entry), and test/operator/platform.test.ts holds the API server's verdict to the parser's on a
 * table of entries. What CEL cannot express cheaply (whether a per-artifact network grant is
 * covered by the capsule's) is caught by the operator, which runs the runtime validator on the
 * rendered murmur.yaml (InvalidManifest, E-OP-009).
 */
import {
  CAPSULE_PATTERN,
  CAPSULE_RULE,
  CIDR_PORT_PATTERN,
  FORMS_RULE,
  HOST_ENTRY_PATTERN,
  IPV4_SHAPED_PATTERN,
  IPV4_VALID_PATTERN,
  SCHEME,
  WILDCARD,
  WILDCARD_RULE,
} from '../../runtime/contracts/network-grant.ts';
import { NAME_RE } from '../../runtime/manifest/checks.ts';
import type { Validation } from './schema.ts';

export const CAPSULE_CODE = 'E-OP-011';
export const HOOK_CODE = 'E-OP-010';

/** A CEL string literal holding a regular expression (fragments are written for RE2 and JS alike). */
const cel = (re: string) => `'${re.replace(/\\/g, '\\\\')}'`;
/** A '*' in the host that does not make a wildcard: the message says the wildcard rule. */
const STAR_IN_HOST = '^([a-zA-Z][a-zA-Z0-9+.-]*://)?[^/]*[*]';
const GOOD_WILDCARD = `^(${SCHEME})?${WILDCARD}(:|/|$)`;

/**
 * One `network.allow` entry (capsule-wide, per-artifact and hook grants): the grammar of
 * runtime/contracts/network-grant.ts, generated from its fragments. isIP/isCIDR (Kubernetes' CEL
 * IP library) check what a regex cannot: IPv6 addresses, in brackets or bare, and CIDRs.
 */
export function allowEntryRules(): Validation[] {
  const bracketed = "self.substring(self.indexOf('[') + 1, self.indexOf(']'))";
  return [
    {
      rule:
        `self.startsWith('capsule://') ? self.matches(${cel(CAPSULE_PATTERN)}) : ` +
        `(isCIDR(self) || isIP(self) || (self.matches(${cel(CIDR_PORT_PATTERN)}) && isCIDR(self.substring(0, self.lastIndexOf(':')))) || ` +
        `(self.matches(${cel(HOST_ENTRY_PATTERN)}) && (self.contains('://') || !self.contains('/')) && (!self.matches(${cel(IPV4_SHAPED_PATTERN)}) || self.matches(${cel(IPV4_VALID_PATTERN)})) && ` +
        `(!self.contains('[') || isIP(${bracketed}))))`,
      messageExpression:
        `"invalid network.allow entry '" + self + "': " + (self.startsWith('capsule://') ? "${CAPSULE_RULE}" : ` +
        `self.matches(${cel(STAR_IN_HOST)}) && !self.matches(${cel(GOOD_WILDCARD)}) ? "${WILDCARD_RULE}" : "${FORMS_RULE}") + " [${CAPSULE_CODE}]"`,
      reason: 'FieldValueInvalid',
    },
  ];
}

export const nameRule = (what: string): Validation => ({
  rule: `self.matches(${cel(NAME_RE.source)})`,
  messageExpression: `"invalid ${what} '" + self + "': use 1-100 lowercase letters, digits and dashes, starting and ending with a letter or digit (e.g. my-tool) [${CAPSULE_CODE}]"`,
  reason: 'FieldValueInvalid',
});

export const versionRule = (code = CAPSULE_CODE): Validation => ({
  rule: "self.matches('\\\\S') && !self.matches('[\\\\s/\\\\\\\\]') && self != '.' && self != '..'",
  messageExpression: `"invalid version '" + self + "': use a version string without spaces or slashes, e.g. '1.0.0' [${code}]"`,
  reason: 'FieldValueInvalid',
});

export const stripEnvRule = (): Validation => ({
  rule: "self.matches('^[A-Za-z0-9_*?]+$')",
  messageExpression: `"invalid shell.strip_env pattern '" + self + "': use an env name with '*' or '?' wildcards, e.g. 'AWS_*' or '*_TOKEN' [${CAPSULE_CODE}]"`,
  reason: 'FieldValueInvalid',
});

/** Appends the code to a rule's message (static or expression) unless it already carries one. */
export function withCode(v: Validation, code: string): Validation {
  if (v.message !== undefined && !v.message.includes('[E-OP-')) return { ...v, message: `${v.message} [${code}]` };
  if (v.messageExpression !== undefined && !v.messageExpression.includes('[E-OP-'))
    return { ...v, messageExpression: `(${v.messageExpression}) + " [${code}]"` };
  if (v.message === undefined && v.messageExpression === undefined) return v;
  return v;
}

/** Every x-kubernetes-validations message in a schema tree gets `code`. */
export function codeAllRules<T>(node: T, code: string): T {
  if (Array.isArray(node)) return node.map((n) => codeAllRules(n, code)) as T;
  if (node && typeof node === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
      out[k] = k === 'x-kubernetes-validations' && Array.isArray(v) ? v.map((x) => withCode(x as Validation, code)) : codeAllRules(v, code);
    }
    return out as T;
  }
  return node;
}
