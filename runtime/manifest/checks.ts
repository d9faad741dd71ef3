/**
 * Value checks used by the schema table (schema.ts) and by the narrowing rules. Each returns
 * `undefined` when the value is fine, else a problem with a stable code, a message and a hint.
 */

import { grantCovers, isGrantProblem, parseGrant, type NetworkGrant } from '../contracts/network-grant.ts';

export interface Problem {
  code: string;
  message: string;
  hint: string;
}

export const NAME_RE = /^[a-z0-9]([a-z0-9-]{0,98}[a-z0-9])?$/;
export const SHA256_RE = /^[0-9a-f]{64}$/;
export const RESERVED_VERSIONS = ['latest', 'stable', 'edge'] as const;

export function checkName(v: string): Problem | undefined {
  if (!NAME_RE.test(v)) {
    return {
      code: 'E-MAN-007',
      message: `invalid name '${v}'`,
      hint: 'use 1-100 lowercase letters, digits and dashes, starting and ending with a letter or digit (e.g. my-tool)',
    };
  }
  return undefined;
}

export function checkVersion(v: string): Problem | undefined {
  if (v.trim() === '' || /[\s/\\]/.test(v) || v === '.' || v === '..') {
    return { code: 'E-MAN-007', message: `invalid version '${v}'`, hint: "use a version string without spaces or slashes, e.g. '1.0.0'" };
  }
  return undefined;
}

export function checkSha256(v: string): Problem | undefined {
  if (!SHA256_RE.test(v)) {
    return { code: 'E-MAN-018', message: `invalid sha256 '${v}'`, hint: 'give the 64 lowercase hex characters printed by `sha256sum <file>`' };
  }
  return undefined;
}

/** A parsed `network.allow` entry (the one grammar: runtime/contracts/network-grant.ts). */
export type NetworkEntry = NetworkGrant;

/** `inference.api_key`: `${UPPER_SNAKE}` (resolved from the host environment at launch) or a literal. */
export function checkApiKey(v: string): Problem | undefined {
  if (v.includes('${') && !/^\$\{[A-Z][A-Z0-9_]*\}$/.test(v)) {
    return {
      code: 'E-MAN-024',
      message: `inference.api_key '${v.replace(/[^${}A-Za-z0-9_]/g, '')}' is neither a literal nor one \${UPPER_SNAKE} reference`,
      hint: 'write api_key: ${OPENAI_API_KEY} (the whole value, an upper-case environment variable name)',
    };
  }
  return undefined;
}

const OCI_PINNED_RE =
  /^([a-zA-Z0-9.-]+(?::[0-9]+)?|\[[0-9a-fA-F:]+\](?::[0-9]+)?)\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?@sha256:[0-9a-f]{64}$/;

/** `source.oci`: a digest-pinned OCI reference. */
export function checkOciRef(v: string): Problem | undefined {
  if (OCI_PINNED_RE.test(v)) return undefined;
  const pinned = /@sha256:[0-9a-f]{64}$/.test(v);
  return {
    code: 'E-MAN-025',
    message: pinned ? `source.oci '${v}' is not an OCI reference <registry>/<repo>[:<tag>]@sha256:<hex>` : `source.oci '${v}' is not pinned by digest`,
    hint: pinned
      ? 'e.g. ghcr.io/acme/echo-tool:1.0.0@sha256:<64 hex>'
      : `append the manifest digest: '${v}@sha256:<64 hex>' (\`mur pull ${v}\` prints it; a tag alone can move)`,
  };
}

/**
 * One `network.allow` entry of murmur.yaml, as the one grammar reads it. A CIDR is refused here:
 * it is a NetworkPolicy grant, which the operator takes from a Capsule and leaves out of the
 * murmur.yaml it renders; the runtime's allowlist matches hosts and addresses.
 */
export function parseNetworkEntry(raw: string): NetworkEntry | Problem {
  const g = parseGrant(raw);
  const bad = (why: string, hint: string): Problem => ({ code: 'E-MAN-008', message: `invalid network.allow entry '${raw}': ${why}`, hint });
  if (isGrantProblem(g)) return bad(g.reason, g.hint);
  if (g.kind === 'cidr')
    return bad(
      "a CIDR is a NetworkPolicy grant (a Capsule's spec takes it); the runtime's allowlist holds hosts and IP addresses",
      `grant the addresses the capsule calls ('${g.cidr.split('/')[0]}'), or give the CIDR in the Capsule resource`,
    );
  return g;
}

export function isProblem(x: unknown): x is Problem {
  return typeof x === 'object' && x !== null && 'code' in x && 'hint' in x;
}

/** Does the capsule-wide entry `ceiling` admit everything the narrower entry `e` admits? */
export const networkCovers = grantCovers;

/** Workdir-relative scope or file path: relative, no `..`, no backslashes. */
export function checkRelativePath(v: string, what: string): Problem | undefined {
  const bad = (why: string): Problem => ({
    code: 'E-MAN-009',
    message: `invalid ${what} '${v}': ${why}`,
    hint: `give a path relative to the ${what === 'filesystem.scope' ? 'session workdir' : 'capsule directory'}, without '..' (e.g. 'data' or 'prompts/system.md')`,
  });
  if (v.trim() === '') return bad('it is empty');
  if (v.startsWith('/') || /^[a-zA-Z]:[\\/]/.test(v)) return bad('it is absolute');
  if (v.includes('\\')) return bad('it contains a backslash');
  if (v.split('/').includes('..')) return bad("it climbs out with '..'");
  if (v.includes('\0')) return bad('it contains a NUL byte');
  return undefined;
}

/** Normalised scope: `.` for the whole workdir, else segments joined by `/`. */
export function normalizeScope(v: string): string {
  const parts = v.split('/').filter((p) => p !== '' && p !== '.');
  return parts.length === 0 ? '.' : parts.join('/');
}

export function scopeCovers(ceiling: string, scope: string): boolean {
  const c = normalizeScope(ceiling);
  const s = normalizeScope(scope);
  return c === '.' || s === c || s.startsWith(`${c}/`);
}

export function checkBinaryName(v: string): Problem | undefined {
  if (!/^[A-Za-z0-9_][A-Za-z0-9._+-]*$/.test(v)) {
    return {
      code: 'E-MAN-010',
      message: `invalid shell.allow entry '${v}': give a bare binary name`,
      hint: `name the binary only, without a path or arguments (e.g. '${v.split(/\s+/)[0]!.split('/').pop() || 'git'}'); the runtime resolves it on PATH`,
    };
  }
  return undefined;
}

export function checkEnvGlob(v: string): Problem | undefined {
  if (!/^[A-Za-z0-9_*?]+$/.test(v)) {
    return {
      code: 'E-MAN-011',
      message: `invalid shell.strip_env pattern '${v}'`,
      hint: "use an env name with '*' or '?' wildcards, e.g. 'AWS_*' or '*_TOKEN'",
    };
  }
  return undefined;
}

export function checkEnvName(v: string): Problem | undefined {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(v)) {
    return {
      code: 'E-MAN-011',
      message: `invalid env.allow name '${v}'`,
      hint: "use an environment variable name such as 'LOG_LEVEL' (letters, digits, '_'; not starting with a digit)",
    };
  }
  return undefined;
}

export function checkHttpUrl(v: string): Problem | undefined {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return { code: 'E-MAN-017', message: `invalid URL '${v}'`, hint: "give an absolute http(s) URL, e.g. 'https://api.example.com/v1'" };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    return {
      code: 'E-MAN-017',
      message: `invalid URL '${v}': scheme '${u.protocol.slice(0, -1)}' is not http or https`,
      hint: 'use an http:// or https:// URL',
    };
  }
  return undefined;
}
