import { describe, expect, it } from 'vitest';
import { parseAllow } from '../../../operator/translate/network.ts';

const known = (ns: string, n: string) => ns === 'b' && n === 'svc1';
const p = (s: string) => parseAllow(s, 'cluster.local', known);

describe('network.allow classification', () => {
  it.each([
    ['capsule://b/svc1', { kind: 'capsule', namespace: 'b', name: 'svc1', shorthand: true }],
    ['http://svc1.b.svc.cluster.local:8080', { kind: 'capsule', namespace: 'b', name: 'svc1', shorthand: false }],
    ['http://other.b.svc:81', { kind: 'service', namespace: 'b', name: 'other', ports: [81] }],
    ['10.0.0.0/8', { kind: 'ip', cidr: '10.0.0.0/8' }],
    ['10.0.0.0/8:443', { kind: 'ip', cidr: '10.0.0.0/8', port: 443 }],
    ['1.2.3.4', { kind: 'ip', cidr: '1.2.3.4/32' }],
    ['1.2.3.4:5432', { kind: 'ip', cidr: '1.2.3.4/32', port: 5432 }],
    ['https://1.2.3.4', { kind: 'ip', cidr: '1.2.3.4/32', port: 443 }],
    ['[fd00::1]:8080', { kind: 'ip', cidr: 'fd00::1/128', port: 8080 }],
    ['fd00::/64', { kind: 'ip', cidr: 'fd00::/64' }],
    ['api.example.com', { kind: 'host', host: 'api.example.com', ports: [80, 443] }],
    ['api.example.com:8443', { kind: 'host', host: 'api.example.com', ports: [8443] }],
    ['https://API.example.com', { kind: 'host', host: 'api.example.com', ports: [443] }],
    ['http://x.example.com', { kind: 'host', host: 'x.example.com', ports: [80] }],
  ])('%s', (raw, want) => expect(p(raw)).toMatchObject(want));

  it.each(['ftp://x.com', 'https://x.com/path', 'x.com:99999', 'capsule://UPPER/x', '10.0.0.0/99', 'a b'])('refuses %s', (raw) => {
    expect(p(raw).kind).toBe('invalid');
  });
});
