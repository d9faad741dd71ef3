import { describe, expect, it } from 'vitest';
import { isAllowed, isUrlAllowed } from '../../runtime/net/allowlist.ts';

describe('network allowlist (one implementation for every grant)', () => {
  const allow = ['api.example.com', 'db.internal:5432', 'https://secure.example.com', 'http://plain.example.com:8080', '*.corp.example', '[::1]:9000'];
  const cases: [string, boolean][] = [
    ['https://api.example.com/v1/x', true],
    ['http://api.example.com:1234/', true],
    ['http://db.internal:5432/', true],
    ['http://db.internal:5433/', false],
    ['https://secure.example.com/', true],
    ['http://secure.example.com/', false],
    ['https://secure.example.com:8443/', false],
    ['http://plain.example.com:8080/a?b', true],
    ['http://plain.example.com/', false],
    ['https://svc.corp.example/', true],
    ['https://corp.example/', false],
    ['http://[::1]:9000/', true],
    ['http://[::1]:9001/', false],
    ['ftp://api.example.com/', false],
    ['https://user:pw@api.example.com/', false],
    ['https://API.EXAMPLE.COM/', true],
    ['not a url', false],
  ];
  for (const [url, ok] of cases) {
    it(`${url} → ${ok ? 'allowed' : 'refused'}`, () => {
      expect(isUrlAllowed(url, allow)).toBe(ok);
    });
  }

  it('the host-side check (a WASM HTTP request’s scheme, authority and port) agrees with the URL check', () => {
    expect(isAllowed(allow, { scheme: 'http', host: 'db.internal', port: 5432 })).toBe(true);
    expect(isAllowed(allow, { scheme: 'https', host: 'secure.example.com', port: 443 })).toBe(true);
    expect(isAllowed(allow, { scheme: 'http', host: 'secure.example.com', port: 80 })).toBe(false);
    expect(isAllowed(allow, { scheme: 'http', host: '[::1]', port: 9000 })).toBe(true);
    expect(isAllowed([], { scheme: 'https', host: 'api.example.com', port: 443 })).toBe(false);
  });

  it('an entry with port 0 is refused by the grammar and so allows nothing, not a request the host reports as port 0', () => {
    expect(isAllowed(['api.example.com:0'], { scheme: 'http', host: 'api.example.com', port: 0 })).toBe(false);
  });

  it('a wildcard allows the names below its domain at any depth, never the domain itself', () => {
    expect(isUrlAllowed('https://x.googleapis.com/v1', ['*.googleapis.com'])).toBe(true);
    expect(isUrlAllowed('https://a.b.googleapis.com/', ['*.googleapis.com'])).toBe(true);
    expect(isUrlAllowed('https://googleapis.com/', ['*.googleapis.com'])).toBe(false);
    // Bad wildcards allow nothing: '*' is not "everything", '*.com' not a whole top-level domain.
    expect(isUrlAllowed('https://x.example.com/', ['*'])).toBe(false);
    expect(isUrlAllowed('https://example.com/', ['*.com'])).toBe(false);
  });
});
