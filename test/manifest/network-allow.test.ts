/**
 * `capabilities.network.allow` in murmur.yaml reads the one grammar (runtime/contracts/
 * network-grant.ts): wildcard hosts are accepted, bad wildcards and CIDRs refused at their index,
 * and a wildcard ceiling covers the names below it.
 */
import { describe, expect, it } from 'vitest';
import { parseManifest } from '../../runtime/manifest/capsule.ts';
import { MINIMAL, errorAt, errorsOf } from './helpers.ts';

const allowYaml = (entries: string[]) => `${MINIMAL}capabilities:\n  network:\n    allow:\n${entries.map((e) => `      - ${JSON.stringify(e)}\n`).join('')}`;

describe('network.allow in murmur.yaml', () => {
  it('accepts wildcard hosts, alone, with a port and with a scheme, and a bare IPv6 address', () => {
    const entries = ['*.googleapis.com', '*.eu.example.com:8443', 'https://*.googleapis.com', 'fd00::1'];
    expect(parseManifest(allowYaml(entries)).capabilities.network.allow).toEqual(entries);
  });

  it('refuses bad wildcards at their index with the wildcard rule (E-MAN-008)', () => {
    const l = errorsOf(allowYaml(['ok.example.com', '*', 'a.*.example.com', '*.com', '*.0.0.1']));
    for (const [i, raw] of [
      [1, '*'],
      [2, 'a.*.example.com'],
      [3, '*.com'],
      [4, '*.0.0.1'],
    ] as const) {
      const e = errorAt(l, `capabilities.network.allow[${i}]`);
      expect(e.code).toBe('E-MAN-008');
      expect(e.message).toBe(
        `invalid network.allow entry '${raw}': a wildcard is '*.' before a domain of at least two labels, e.g. '*.googleapis.com' (not '*', '*.com' or 'a.*.com'); it allows the names below the domain, not the domain itself`,
      );
      expect(e.location?.line).toBe(6 + i);
    }
  });

  it('refuses port 0', () => {
    const e = errorAt(errorsOf(allowYaml(['api.example.com:0'])), 'capabilities.network.allow[0]');
    expect(e.message).toBe("invalid network.allow entry 'api.example.com:0': port 0 is out of range 1-65535");
  });

  it('refuses a CIDR, saying it is a NetworkPolicy grant the runtime cannot hold', () => {
    const e = errorAt(errorsOf(allowYaml(['10.0.0.0/8'])), 'capabilities.network.allow[0]');
    expect(e.code).toBe('E-MAN-008');
    expect(e.message).toBe(
      "invalid network.allow entry '10.0.0.0/8': a CIDR is a NetworkPolicy grant (a Capsule's spec takes it); the runtime's allowlist holds hosts and IP addresses",
    );
  });

  it('a capsule-wide wildcard covers a per-artifact host or narrower wildcard below it, not the reverse', () => {
    const yaml = (ceiling: string, narrower: string) =>
      `${allowYaml([ceiling])}artifacts:\n  - name: t\n    version: "1"\n    capabilities:\n      network:\n        allow: [${JSON.stringify(narrower)}]\n`;
    expect(() => parseManifest(yaml('*.googleapis.com', 'storage.googleapis.com'))).not.toThrow();
    expect(() => parseManifest(yaml('*.googleapis.com', '*.eu.googleapis.com'))).not.toThrow();
    const e = errorAt(errorsOf(yaml('storage.googleapis.com', '*.googleapis.com')), 'artifacts[0].capabilities.network.allow[0]');
    expect(e.code).toBe('E-MAN-016');
  });
});
