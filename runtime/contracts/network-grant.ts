/**
 * The grammar of a `capabilities.network.allow` entry — the one definition behind every network
 * grant: the manifest validator, the runtime's matching (WASI outgoing HTTP, the A2A client,
 * `delegate-task`, push notification URLs), the operator's NetworkPolicy builder and the CEL rule
 * the Capsule CRD admits entries with (operator/crd/admission.ts builds it from the fragments
 * exported here, so the API server and this parser read one grammar).
 *
 *   capsule://<namespace>/<name>                    a peer capsule (the operator renders its URL)
 *   [http(s)://]<host>[:<port>]   (+ /path after a scheme, ignored: a grant is per destination)
 *       <host> = a hostname | *.<domain> | an IPv4 address | [<IPv6>]
 *   <IPv6>                                          a bare IPv6 address (any port)
 *   <IPv4>/<bits>[:<port>] | <IPv6>/<bits>           a CIDR (NetworkPolicy only)
 *
 * A bare host allows both schemes on any port; `host:port` pins the port; `scheme://host` pins the
 * scheme and means its default port unless one is given. Ports are 1-65535 without leading zeros.
 * `*.<domain>` allows every name below the domain, at any depth, never the domain itself; the
 * domain has at least two labels and its last label starts with a letter (so `*`, `*.com`,
 * `a.*.com` and `*.0.0.1` are refused). Hosts compare case-insensitively.
 *
 * A leaf: imports nothing, so the operator (which may import runtime/contracts only) and the
 * runtime share it.
 */

// --- Fragments: regular expressions valid in both JavaScript and RE2 (CEL's `matches`), no flags.

const LABEL = '[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?';
/** A top-level label starts with a letter: a wildcard's domain is never an IP address's tail. */
const ALPHA_LABEL = '[a-zA-Z]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?';
const DNS_LABEL = '[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?';
export const HOSTNAME = `${LABEL}(\\.${LABEL})*`;
export const WILDCARD = `\\*\\.(${LABEL}\\.)+${ALPHA_LABEL}`;
const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
export const IPV4 = `${OCTET}(\\.${OCTET}){3}`;
/** Four numeric labels are an IPv4 address (valid or not) to the URL parser, never a hostname. */
export const IPV4_SHAPE = '[0-9]+(\\.[0-9]+){3}';
/** Brackets around IPv6 characters; the address itself is checked by validIPv6 here, isIP in CEL. */
export const IPV6_BRACKETED = '\\[[0-9a-fA-F:.]*:[0-9a-fA-F:.]*\\]';
export const PORT = '([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])';
export const SCHEME = '[hH][tT][tT][pP][sS]?://';
/** A path after a scheme: no query, fragment, credentials, whitespace or brackets. */
export const PATH = '/[^?#@\\s\\[\\]]*';
const HOSTS = `${HOSTNAME}|${WILDCARD}|${IPV6_BRACKETED}`;

/**
 * Every host entry: `[scheme://]host[:port][/path]`. A path is taken only after a scheme: a rule
 * adds that check apart (`contains('://') || !contains('/')`), which keeps this pattern, and so its
 * CEL cost, at one copy of the host forms.
 */
export const HOST_ENTRY_PATTERN = `^(${SCHEME})?(${HOSTS})(:${PORT})?(${PATH})?$`;
/** A host entry whose host is IPv4-shaped … */
export const IPV4_SHAPED_PATTERN = `^(${SCHEME})?${IPV4_SHAPE}(:|/|$)`;
/** … must be a valid IPv4 address. */
export const IPV4_VALID_PATTERN = `^(${SCHEME})?${IPV4}(:|/|$)`;
export const CAPSULE_PATTERN = `^capsule://${DNS_LABEL}/${DNS_LABEL}$`;
/** An IPv4 CIDR with a port; the CIDR before the last ':' is checked by isCIDR in CEL. */
export const CIDR_PORT_PATTERN = `^[0-9.]+/[0-9]{1,2}:${PORT}$`;

// --- The rules as sentences (the manifest validator's and the CRD's messages say the same).

export const CAPSULE_RULE = 'a capsule peer is written capsule://<namespace>/<name>';
export const WILDCARD_RULE =
  "a wildcard is '*.' before a domain of at least two labels, e.g. '*.googleapis.com' (not '*', '*.com' or 'a.*.com'); it allows the names below the domain, not the domain itself";
export const FORMS_RULE =
  'use host, host:port or http(s)://host[:port] (no other scheme, no query or user:password@; port 1-65535), *.domain, an IP or a CIDR (optionally :port)';

// --- Parse and classify.

export type Scheme = 'http' | 'https';

/** `port` is the effective port: the one written, else the scheme's default; undefined = any. */
interface Reach {
  raw: string;
  scheme?: Scheme;
  port?: number;
}

export type NetworkGrant =
  | (Reach & { kind: 'host'; host: string })
  | (Reach & { kind: 'wildcard'; host: string; suffix: string })
  | (Reach & { kind: 'ip'; ip: string; family: 4 | 6 })
  | { kind: 'cidr'; raw: string; cidr: string; family: 4 | 6; port?: number }
  | { kind: 'capsule'; raw: string; namespace: string; name: string };

export interface GrantProblem {
  kind: 'invalid';
  raw: string;
  reason: string;
  hint: string;
}

export const DEFAULT_PORT: Readonly<Record<Scheme, number>> = { http: 80, https: 443 };

const whole = (source: string) => new RegExp(`^(${source})$`);
const HOSTNAME_RE = whole(HOSTNAME);
const WILDCARD_RE = whole(WILDCARD);
const IPV4_RE = whole(IPV4);
const IPV4_SHAPE_RE = whole(IPV4_SHAPE);
const PORT_RE = whole(PORT);
const PATH_RE = whole(PATH);
const CAPSULE_RE = new RegExp(CAPSULE_PATTERN);

const DEFAULT_HINT = "use 'host', 'host:port', '*.domain' or an 'http(s)://host[:port][/path]' URL (the path is ignored), or 'capsule://<namespace>/<name>'";

function problem(raw: string, reason: string, hint = DEFAULT_HINT): GrantProblem {
  return { kind: 'invalid', raw, reason, hint };
}

function portProblem(raw: string, port: string): GrantProblem {
  const why = /^0[0-9]/.test(port) && Number(port) <= 65535 ? 'has a leading zero' : 'is out of range 1-65535';
  return problem(raw, `port ${port} ${why}`, 'write the port as a number from 1 to 65535 without leading zeros');
}

/** 8 groups of 16 bits, or undefined: the IPv6 text forms Go's netip.ParseAddr accepts, no zone. */
function ipv6Groups(s: string): number[] | undefined {
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const side = (t: string, last: boolean): number[] | undefined => {
    if (t === '') return [];
    const out: number[] = [];
    const parts = t.split(':');
    for (const [i, p] of parts.entries()) {
      if (last && i === parts.length - 1 && IPV4_RE.test(p)) {
        const o = p.split('.').map(Number) as [number, number, number, number];
        out.push((o[0] << 8) | o[1], (o[2] << 8) | o[3]);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(p)) out.push(parseInt(p, 16));
      else return undefined;
    }
    return out;
  };
  const head = side(halves[0]!, halves.length === 1);
  const tail = halves.length === 2 ? side(halves[1]!, true) : [];
  if (!head || !tail) return undefined;
  const n = head.length + tail.length;
  if (halves.length === 1) return n === 8 ? head : undefined;
  return n < 8 ? [...head, ...Array<number>(8 - n).fill(0), ...tail] : undefined;
}

/** An IPv6 address as the API server's isIP() takes it: no zone, not IPv4-mapped (::ffff:a.b.c.d). */
export function validIPv6(s: string): boolean {
  const g = ipv6Groups(s);
  return g !== undefined && !(g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff);
}

/** A host as matching compares it: lowercase, no brackets, IPv6 in its shortest form. */
export function normalizeHost(host: string): string {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (!h.includes(':')) return h;
  try {
    return new URL(`http://[${h}]/`).hostname.slice(1, -1);
  } catch {
    return h;
  }
}

/** An entry without a scheme holding a '/': a CIDR, or undefined when the part before it is no IP. */
function parseCidr(raw: string, s: string): NetworkGrant | GrantProblem | undefined {
  const addr = s.slice(0, s.indexOf('/'));
  if (!IPV4_SHAPE_RE.test(addr) && !addr.includes(':')) return undefined;
  const m = /^([^/]+)\/(0|[1-9][0-9]{0,2})(?::([^:]*))?$/.exec(s);
  const family = m && IPV4_RE.test(m[1]!) ? 4 : m && validIPv6(m[1]!) ? 6 : undefined;
  if (!m || family === undefined || Number(m[2]) > (family === 4 ? 32 : 128)) {
    return problem(
      raw,
      `'${s.split(/:(?=[^:]*$)/)[0]}' is not a CIDR`,
      "write an address and a prefix length (0-32 for IPv4, 0-128 for IPv6) without leading zeros, e.g. '10.0.0.0/16'",
    );
  }
  if (m[3] !== undefined && family === 6) return problem(raw, 'an IPv6 CIDR takes no port', `write '${m[1]}/${m[2]}'`);
  if (m[3] !== undefined && !PORT_RE.test(m[3])) return portProblem(raw, m[3]);
  return { kind: 'cidr', raw, cidr: `${m[1]}/${m[2]}`, family, ...(m[3] !== undefined ? { port: Number(m[3]) } : {}) };
}

function classifyHost(raw: string, host: string, reach: { scheme?: Scheme; port?: number }): NetworkGrant | GrantProblem {
  const at = { raw, ...reach };
  if (host.startsWith('[')) {
    const inner = host.slice(1, -1);
    return validIPv6(inner) ? { kind: 'ip', ...at, ip: normalizeHost(inner), family: 6 } : problem(raw, `'${host}' is not a valid IPv6 address`);
  }
  if (IPV4_SHAPE_RE.test(host)) return IPV4_RE.test(host) ? { kind: 'ip', ...at, ip: host, family: 4 } : problem(raw, `'${host}' is not a valid IP address`);
  if (host.includes('*')) {
    if (!WILDCARD_RE.test(host)) return problem(raw, WILDCARD_RULE, "grant the names below a domain as '*.<domain>', or name the host");
    const h = host.toLowerCase();
    return { kind: 'wildcard', ...at, host: h, suffix: h.slice(2) };
  }
  if (host === '' || !HOSTNAME_RE.test(host)) return problem(raw, `'${host}' is not a valid host name or IP address`);
  return { kind: 'host', ...at, host: host.toLowerCase() };
}

/** Parses and classifies one entry. Nothing is trimmed: whitespace is refused. */
export function parseGrant(raw: string): NetworkGrant | GrantProblem {
  if (raw.startsWith('capsule://')) {
    if (!CAPSULE_RE.test(raw)) return problem(raw, CAPSULE_RULE, "e.g. 'capsule://default/reviewer'");
    const [namespace, name] = raw.slice('capsule://'.length).split('/') as [string, string];
    return { kind: 'capsule', raw, namespace, name };
  }
  let rest = raw;
  let scheme: Scheme | undefined;
  const sm = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(raw);
  if (sm) {
    const s = sm[1]!.toLowerCase();
    if (s !== 'http' && s !== 'https')
      return problem(raw, `scheme '${s}' is not allowed; only http and https`, "write 'http://' or 'https://' before the host, or the host alone");
    scheme = s;
    rest = raw.slice(sm[0].length);
    // A URL with a path (an endpoint copied from inference.endpoint, e.g. https://api.openai.com/v1)
    // grants its scheme, host and port: a grant is per destination, never per path.
    const slash = rest.indexOf('/');
    if (slash >= 0 && !/[?#@]/.test(rest) && PATH_RE.test(rest.slice(slash))) rest = rest.slice(0, slash);
  } else if (rest.includes('/') && !/[?#@]/.test(rest)) {
    const cidr = parseCidr(raw, rest);
    if (cidr) return cidr;
  }
  if (/[/?#@]/.test(rest)) {
    return problem(
      raw,
      'an entry names a host, not a URL path, query, fragment or credentials',
      `drop everything after the host and port: '${scheme ? `${scheme}://` : ''}${rest.split(/[/?#]/)[0]!.split('@').pop()}'`,
    );
  }
  if (!rest.startsWith('[') && (rest.match(/:/g)?.length ?? 0) > 1) {
    if (scheme) return problem(raw, 'an IPv6 address in a URL is written in brackets', `write '${scheme}://[<IPv6>][:<port>]'`);
    return validIPv6(rest)
      ? { kind: 'ip', raw, ip: normalizeHost(rest), family: 6 }
      : problem(raw, `'${rest}' is not a valid IPv6 address`, "write an IPv6 address, or '[<IPv6>]:<port>' with a port");
  }
  const m = /^(\[[^\]]*\]|[^:[\]]*)(?::(.*))?$/.exec(rest);
  if (!m) return problem(raw, `'${rest}' is not a host, host:port or [IPv6]:port`);
  const host = m[1]!;
  let port: number | undefined;
  if (m[2] !== undefined) {
    if (!/^[0-9]+$/.test(m[2])) return problem(raw, 'the port must be a number');
    if (!PORT_RE.test(m[2])) return portProblem(raw, m[2]);
    port = Number(m[2]);
  }
  if (port === undefined && scheme) port = DEFAULT_PORT[scheme];
  return classifyHost(raw, host, { ...(scheme ? { scheme } : {}), ...(port !== undefined ? { port } : {}) });
}

export function isGrantProblem(x: NetworkGrant | GrantProblem): x is GrantProblem {
  return x.kind === 'invalid';
}

/** Parses a whole list; each problem names the entry's field and index (`<field>[<i>]`). */
export function parseGrants(
  list: readonly string[],
  field: string,
): { grants: NetworkGrant[]; problems: Array<GrantProblem & { index: number; field: string }> } {
  const grants: NetworkGrant[] = [];
  const problems: Array<GrantProblem & { index: number; field: string }> = [];
  list.forEach((raw, index) => {
    const g = parseGrant(raw);
    if (isGrantProblem(g)) problems.push({ ...g, index, field: `${field}[${index}]` });
    else grants.push(g);
  });
  return { grants, problems };
}

// --- Match.

/** Where a request goes: its scheme, host and port (the scheme's default when none is given). */
export interface Destination {
  scheme: string;
  host: string;
  port: number;
}

function hostMatches(g: NetworkGrant, host: string): boolean {
  if (g.kind === 'host') return host === g.host;
  if (g.kind === 'ip') return host === g.ip;
  if (g.kind === 'wildcard') return host.endsWith(`.${g.suffix}`);
  // CIDRs are NetworkPolicy grants and capsule:// peers are rendered to URLs by the operator: the
  // runtime's allowlist holds neither, so neither lets a request through.
  return false;
}

/** Whether one grant lets a request to `d` through. */
export function grantAllows(g: NetworkGrant, d: Destination): boolean {
  if (d.scheme !== 'http' && d.scheme !== 'https') return false;
  if (g.kind === 'cidr' || g.kind === 'capsule') return false;
  if (g.scheme !== undefined && g.scheme !== d.scheme) return false;
  if (g.port !== undefined && g.port !== d.port) return false;
  return hostMatches(g, normalizeHost(d.host));
}

/** Whether any valid entry of `allow` lets a request to `d` through (invalid entries allow nothing). */
export function allowsDestination(allow: readonly string[], d: Destination): boolean {
  return allow.some((raw) => {
    const g = parseGrant(raw);
    return !isGrantProblem(g) && grantAllows(g, d);
  });
}

/** Does `ceiling` (a capsule-wide grant) allow everything `g` (a narrower one) allows? */
export function grantCovers(ceiling: NetworkGrant, g: NetworkGrant): boolean {
  if (ceiling.kind === 'capsule' || g.kind === 'capsule' || ceiling.kind === 'cidr' || g.kind === 'cidr') return ceiling.raw === g.raw;
  if (ceiling.scheme !== undefined && ceiling.scheme !== g.scheme) return false;
  if (ceiling.port !== undefined && ceiling.port !== g.port) return false;
  if (g.kind === 'wildcard') return ceiling.kind === 'wildcard' && (g.suffix === ceiling.suffix || g.suffix.endsWith(`.${ceiling.suffix}`));
  return hostMatches(ceiling, g.kind === 'ip' ? g.ip : g.host);
}
