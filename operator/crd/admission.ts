/**
 * CEL admission rules for the values the runtime's manifest validator checks (runtime/manifest/
 * checks.ts), so `kubectl apply` refuses what the runtime would refuse at start, at the field and
 * list index the API server names, with the fix in the message and the code E-OP-011.
 *
 * Why CEL and not a validating webhook running the runtime's validator: CEL runs inside the API
 * server, so there is no webhook Deployment, no certificates to rotate, no failurePolicy to choose
 * between "refuse everything while the operator is down" and "admit anything"; and it is checked
 * by `kubectl apply --dry-run=server` and by GitOps tools without the operator. The cost is that the
 * rules restate the runtime's grammar: they are built here from the runtime's own regexes
 * (NAME_RE, the host label) where it exports them, and test/operator/admission.test.ts holds the
 * API server's verdict to the runtime parser's on a table of entries. What CEL cannot express
 * cheaply (whether a per-artifact network grant is covered by the capsule's) is caught by the
 * operator, which runs the runtime validator on the rendered murmur.yaml (InvalidManifest, E-OP-009).
 */
import { NAME_RE } from '../../runtime/manifest/checks.ts';
import type { Validation } from './schema.ts';

export const CAPSULE_CODE = 'E-OP-011';
export const HOOK_CODE = 'E-OP-010';

const LABEL = '[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?';
const HOSTNAME = `${LABEL}(\\\\.${LABEL})*`;
const PORT = '([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])';
const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
const V6 = '\\\\[[0-9a-fA-F:.]*:[0-9a-fA-F:.]*\\\\]';
const SCHEME = '([hH][tT][tT][pP][sS]?://)';
/** The runtime's host-entry grammar: [http(s)://]host[:port][/] (the slash only after a scheme, checked apart). */
const HOST_ENTRY = `^${SCHEME}?(${HOSTNAME}|${V6})(:${PORT})?/?$`;
/** Four numeric labels are an IPv4 address to the runtime: each must be an octet. */
const IPV4_SHAPE = `^${SCHEME}?[0-9]{1,3}(\\\\.[0-9]{1,3}){3}(:|/|$)`;
const IPV4_VALID = `^${SCHEME}?${OCTET}(\\\\.${OCTET}){3}(:|/|$)`;
const CAPSULE_PEER = '^capsule://[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
/** The operator's addition: an IPv4 CIDR with a port (NetworkPolicy only; isCIDR checks the CIDR). */
const CIDR_PORT = `^[0-9.]+/[0-9]{1,2}:${PORT}$`;

const cel = (re: string) => `'${re}'`;

/** One `network.allow` entry (capsule-wide, per-artifact and hook grants). */
export function allowEntryRules(): Validation[] {
  return [
    {
      rule:
        `self.startsWith('capsule://') ? self.matches(${cel(CAPSULE_PEER)}) : ` +
        `(isCIDR(self) || isIP(self) || (self.matches(${cel(CIDR_PORT)}) && isCIDR(self.substring(0, self.lastIndexOf(':')))) || ` +
        `(self.matches(${cel(HOST_ENTRY)}) && (self.contains('://') || !self.endsWith('/')) && (!self.matches(${cel(IPV4_SHAPE)}) || self.matches(${cel(IPV4_VALID)}))))`,
      messageExpression:
        `"invalid network.allow entry '" + self + "': " + (self.startsWith('capsule://') ? "a capsule peer is written capsule://<namespace>/<name>" : ` +
        `"use host, host:port or http(s)://host[:port] (no other scheme, no path, query or user:password@; port 1-65535; no wildcards), an IP or CIDR (optionally :port)") + " [${CAPSULE_CODE}]"`,
      reason: 'FieldValueInvalid',
    },
  ];
}

export const nameRule = (what: string): Validation => ({
  rule: `self.matches(${cel(NAME_RE.source.replace(/\\/g, '\\\\'))})`,
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
  if (v.messageExpression !== undefined && !v.messageExpression.includes('[E-OP-')) return { ...v, messageExpression: `(${v.messageExpression}) + " [${code}]"` };
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
