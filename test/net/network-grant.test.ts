/**
 * The one grammar of `capabilities.network.allow` (runtime/contracts/network-grant.ts): parse and
 * classify, problems naming the entry's index, matching, covering, and the CEL fragments agreeing
 * with the parser (the real API server's verdict is test/operator/platform.test.ts's).
 */
import { describe, expect, it } from 'vitest';
import {
  CAPSULE_PATTERN,
  CIDR_PORT_PATTERN,
  HOST_ENTRY_PATTERN,
  IPV4_SHAPED_PATTERN,
  IPV4_VALID_PATTERN,
  allowsDestination,
  grantAllows,
  grantCovers,
  isGrantProblem,
  parseGrant,
  parseGrants,
  validIPv6,
  type NetworkGrant,
} from '../../runtime/contracts/network-grant.ts';

const grant = (raw: string): NetworkGrant => {
  const g = parseGrant(raw);
  if (isGrantProblem(g)) throw new Error(`${raw}: ${g.reason}`);
  return g;
};

describe('parse and classify', () => {
  it.each([
    ['api.example.com', { kind: 'host', host: 'api.example.com' }],
    ['API.Example.com:8443', { kind: 'host', host: 'api.example.com', port: 8443 }],
    ['https://api.example.com', { kind: 'host', host: 'api.example.com', scheme: 'https', port: 443 }],
    ['http://x.example.com:8080/v1/chat', { kind: 'host', host: 'x.example.com', scheme: 'http', port: 8080 }],
    ['*.googleapis.com', { kind: 'wildcard', host: '*.googleapis.com', suffix: 'googleapis.com' }],
    ['https://*.GoogleApis.com', { kind: 'wildcard', suffix: 'googleapis.com', scheme: 'https', port: 443 }],
    ['*.eu.example.com:8443', { kind: 'wildcard', suffix: 'eu.example.com', port: 8443 }],
    ['1.2.3.4', { kind: 'ip', ip: '1.2.3.4', family: 4 }],
    ['https://1.2.3.4', { kind: 'ip', ip: '1.2.3.4', port: 443 }],
    ['[fd00:0::1]:8080', { kind: 'ip', ip: 'fd00::1', family: 6, port: 8080 }],
    ['fd00::1', { kind: 'ip', ip: 'fd00::1', family: 6 }],
    ['10.0.0.0/8', { kind: 'cidr', cidr: '10.0.0.0/8', family: 4 }],
    ['10.0.0.0/8:5432', { kind: 'cidr', cidr: '10.0.0.0/8', port: 5432 }],
    ['fd00::/64', { kind: 'cidr', cidr: 'fd00::/64', family: 6 }],
    ['capsule://team-a/reviewer', { kind: 'capsule', namespace: 'team-a', name: 'reviewer' }],
  ])('%s', (raw, want) => expect(parseGrant(raw)).toMatchObject({ raw, ...want }));

  it.each([
    ['*', "a wildcard is '*.' before a domain"],
    ['*.com', "a wildcard is '*.' before a domain"],
    ['a.*.example.com', "a wildcard is '*.' before a domain"],
    ['*.0.0.1', "a wildcard is '*.' before a domain"],
    ['**.example.com', "a wildcard is '*.' before a domain"],
    ['api.example.com:0', 'port 0 is out of range 1-65535'],
    ['https://api.example.com:0', 'port 0 is out of range 1-65535'],
    ['[::1]:0', 'port 0 is out of range 1-65535'],
    ['10.0.0.0/8:0', 'port 0 is out of range 1-65535'],
    ['api.example.com:99999', 'port 99999 is out of range 1-65535'],
    ['api.example.com:0443', 'port 0443 has a leading zero'],
    ['host:port', 'the port must be a number'],
    ['ftp://files.example.com', "scheme 'ftp' is not allowed"],
    ['https://api.example.com?x=1', 'not a URL path, query, fragment or credentials'],
    ['user:pw@api.example.com', 'not a URL path, query, fragment or credentials'],
    ['api.example.com/', 'not a URL path, query, fragment or credentials'],
    ['10.0.0.0/33', "'10.0.0.0/33' is not a CIDR"],
    ['fd00::/64:80', 'an IPv6 CIDR takes no port'],
    ['999.1.1.1', "'999.1.1.1' is not a valid IP address"],
    ['::ffff:1.2.3.4', 'is not a valid IPv6 address'],
    ['https://fd00::1', 'an IPv6 address in a URL is written in brackets'],
    [' api.example.com', 'is not a valid host name'],
    ['capsule://Bad/x', 'a capsule peer is written capsule://<namespace>/<name>'],
  ])('refuses %j: %s', (raw, reason) => {
    const g = parseGrant(raw);
    expect(isGrantProblem(g) && g.reason).toContain(reason);
  });

  it('problems name the field and index of the entry', () => {
    const { grants, problems } = parseGrants(['ok.example.com', '*', 'x.example.com:0'], 'capabilities.network.allow');
    expect(grants.map((g) => g.raw)).toEqual(['ok.example.com']);
    expect(problems.map(({ index, field, raw }) => ({ index, field, raw }))).toEqual([
      { index: 1, field: 'capabilities.network.allow[1]', raw: '*' },
      { index: 2, field: 'capabilities.network.allow[2]', raw: 'x.example.com:0' },
    ]);
  });

  it('IPv6 addresses are the ones the API server’s isIP() takes', () => {
    for (const ok of ['::', '::1', 'fd00::1', '2001:db8:0:0:0:0:0:1', '64:ff9b::1.2.3.4']) expect(validIPv6(ok), ok).toBe(true);
    for (const bad of ['1:2:3:4:5:6:7:8:9', '1::2::3', 'fe80::1%eth0', '::ffff:1.2.3.4', '12345::1', ':1', '1:2:3:4:5:6:7::8'])
      expect(validIPv6(bad), bad).toBe(false);
  });
});

describe('match', () => {
  const allow = ['*.googleapis.com', 'db.internal:5432', 'https://secure.example.com', '[::1]:9000', 'fd00::2', 'capsule://ns/peer', '10.0.0.0/8'];
  it.each([
    [{ scheme: 'https', host: 'x.googleapis.com', port: 443 }, true],
    [{ scheme: 'http', host: 'a.b.googleapis.com', port: 8080 }, true],
    [{ scheme: 'https', host: 'X.GoogleAPIs.com', port: 443 }, true],
    [{ scheme: 'https', host: 'googleapis.com', port: 443 }, false],
    [{ scheme: 'https', host: 'xgoogleapis.com', port: 443 }, false],
    [{ scheme: 'https', host: 'googleapis.com.evil.test', port: 443 }, false],
    [{ scheme: 'http', host: 'db.internal', port: 5432 }, true],
    [{ scheme: 'http', host: 'db.internal', port: 5433 }, false],
    [{ scheme: 'https', host: 'secure.example.com', port: 443 }, true],
    [{ scheme: 'http', host: 'secure.example.com', port: 443 }, false],
    [{ scheme: 'http', host: '[::1]', port: 9000 }, true],
    [{ scheme: 'http', host: '[0:0::1]', port: 9000 }, true],
    [{ scheme: 'http', host: 'fd00::2', port: 1 }, true],
    [{ scheme: 'ftp', host: 'x.googleapis.com', port: 21 }, false],
    // NetworkPolicy-only and operator-rendered grants let nothing through in the runtime.
    [{ scheme: 'http', host: '10.1.2.3', port: 80 }, false],
    [{ scheme: 'http', host: 'peer.ns.svc', port: 8080 }, false],
  ])('%j → %s', (dest, ok) => expect(allowsDestination(allow, dest)).toBe(ok));

  it('an invalid entry allows nothing (port 0 never matches a request made without a port)', () => {
    expect(allowsDestination(['api.example.com:0', '*'], { scheme: 'http', host: 'api.example.com', port: 0 })).toBe(false);
    expect(grantAllows(grant('*.example.com'), { scheme: 'https', host: 'example.com', port: 443 })).toBe(false);
  });

  it.each([
    ['*.googleapis.com', 'storage.googleapis.com', true],
    ['*.googleapis.com', '*.eu.googleapis.com', true],
    ['*.googleapis.com', '*.googleapis.com:443', true],
    ['*.googleapis.com', 'googleapis.com', false],
    ['*.googleapis.com:443', '*.googleapis.com', false],
    ['storage.googleapis.com', '*.googleapis.com', false],
    ['https://*.googleapis.com', 'http://x.googleapis.com', false],
    ['api.example.com', 'https://api.example.com', true],
    ['https://api.example.com', 'api.example.com:443', false],
  ])('%s covers %s: %s', (ceiling, narrower, ok) => expect(grantCovers(grant(ceiling), grant(narrower))).toBe(ok));
});

/** The CRD's rule (operator/crd/admission.ts) as JavaScript: the fragments, isIP and isCIDR. */
function celVerdict(e: string): boolean {
  const isIP = (s: string) => validIPv6(s) || new RegExp(IPV4_VALID_PATTERN.replace(/\(:\|\/\|\$\)$/, '$')).test(s);
  const isCIDR = (s: string) => {
    const g = parseGrant(s);
    return !isGrantProblem(g) && g.kind === 'cidr' && g.port === undefined;
  };
  const m = (p: string) => new RegExp(p).test(e);
  if (e.startsWith('capsule://')) return m(CAPSULE_PATTERN);
  return (
    isCIDR(e) ||
    isIP(e) ||
    (m(CIDR_PORT_PATTERN) && isCIDR(e.slice(0, e.lastIndexOf(':')))) ||
    (m(HOST_ENTRY_PATTERN) &&
      (e.includes('://') || !e.includes('/')) &&
      (!m(IPV4_SHAPED_PATTERN) || m(IPV4_VALID_PATTERN)) &&
      (!e.includes('[') || validIPv6(e.slice(e.indexOf('[') + 1, e.indexOf(']')))))
  );
}

describe('the CEL fragments say what the parser says', () => {
  const table = [
    'api.example.com',
    'api.example.com:8443',
    'https://api.example.com',
    'http://x.example.com:80/',
    'HTTPS://Api.Example.com',
    'https://api.example.com/v1',
    '*.googleapis.com',
    'https://*.googleapis.com:8443/x',
    '*',
    '*.com',
    'a.*.example.com',
    '*.0.0.1',
    'https://*',
    '*.example.com:0',
    '10.0.0.0/8',
    '10.0.0.0/8:5432',
    '10.0.0.0/8:0',
    '1.2.3.4',
    '1.2.3.4:443',
    '[fd00::1]:8080',
    '[fd00::1]:0',
    'fd00::/64',
    'fd00::1',
    '[::ffff:1.2.3.4]',
    'capsule://team-a/reviewer',
    'capsule://Bad/x',
    'ftp://files.example.com',
    'https://api.example.com?x=1',
    '10.0.0.0/33',
    'api.example.com:99999',
    'api.example.com:0',
    'api.example.com:0443',
    'user:pw@api.example.com',
    'https://user:pw@api.example.com',
    '999.1.1.1',
    'a b',
    'host:port',
    'api.example.com/',
    `${'a'.repeat(64)}.example.com`,
    `${'a'.repeat(63)}.example.com`,
    'https://x.example.com/a b',
    'https://x.example.com/[x]',
  ];
  it.each(table)('%s', (e) => expect(celVerdict(e)).toBe(!isGrantProblem(parseGrant(e))));
});
