import { describe, expect, it } from 'vitest';
import { allowEntryRules } from '../../../operator/crd/admission.ts';
import { parseAllow } from '../../../operator/translate/network.ts';
import {
  CAPSULE_PATTERN,
  CIDR_PORT_PATTERN,
  HOST_ENTRY_PATTERN,
  IPV4_SHAPED_PATTERN,
  IPV4_VALID_PATTERN,
  WILDCARD,
  WILDCARD_RULE,
} from '../../../runtime/contracts/network-grant.ts';
import { translate } from '../../../operator/translate/index.ts';
import { defaultOptions, PRIVATE_RANGES } from '../../../operator/translate/options.ts';

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
    ['*.googleapis.com', { kind: 'host', host: '*.googleapis.com', ports: [80, 443] }],
    ['https://*.googleapis.com', { kind: 'host', host: '*.googleapis.com', ports: [443] }],
    ['*.example.com:8443', { kind: 'host', host: '*.example.com', ports: [8443] }],
  ])('%s', (raw, want) => expect(p(raw)).toMatchObject(want));

  it.each(['ftp://x.com', 'https://x.com/path?q', 'x.com:99999', 'x.com:0', 'capsule://UPPER/x', '10.0.0.0/99', 'a b', '*', '*.com', 'a.*.example.com'])(
    'refuses %s',
    (raw) => {
      expect(p(raw).kind).toBe('invalid');
    },
  );
});

describe('a wildcard grant renders like a hostname grant', () => {
  it('kept as written in murmur.yaml, its ports opened to public addresses, named in the annotation', () => {
    const r = translate({
      capsule: {
        apiVersion: 'murmur.io/v1alpha1',
        kind: 'Capsule',
        metadata: { name: 'c', namespace: 'ns', uid: 'u' },
        spec: {
          artifacts: [{ name: 'd', version: '1.0.0', runtime: 'driver' as const }],
          inference: { driver: { artifact: 'd' }, model: 'm', endpoint: 'https://api.anthropic.com' },
          capabilities: { network: { allow: ['*.googleapis.com', 'https://*.storage.example.com:8443'] } },
        },
      },
      hooks: {},
      secrets: {},
      callers: [],
      capsulePorts: {},
      options: defaultOptions(),
    });
    expect(r.problems.filter((p) => p.fatal)).toEqual([]);
    const cm = r.objects.find((o) => o.kind === 'ConfigMap') as any;
    expect(cm.data['murmur.yaml']).toContain('allow:\n      - "*.googleapis.com"\n      - https://*.storage.example.com:8443\n');
    const egress = r.objects.find((o) => o.metadata.name === 'c-egress') as any;
    expect(egress.metadata.annotations['murmur.io/hostnames-enforced-by-runtime']).toBe(
      '*.googleapis.com,https://*.storage.example.com:8443,https://api.anthropic.com',
    );
    const anyRule = egress.spec.egress.find((x: any) => x.to.some((t: any) => t.ipBlock?.cidr === '0.0.0.0/0'));
    expect(anyRule.ports).toEqual([80, 443, 8443].map((port) => ({ protocol: 'TCP', port })));
  });

  it('a bad wildcard is a fatal InvalidNetworkAllow naming the field and index', () => {
    const r = translate({
      capsule: {
        apiVersion: 'murmur.io/v1alpha1',
        kind: 'Capsule',
        metadata: { name: 'c', namespace: 'ns', uid: 'u' },
        spec: { capabilities: { network: { allow: ['ok.example.com', '*.com'] } } },
      },
      hooks: {},
      secrets: {},
      callers: [],
      capsulePorts: {},
      options: defaultOptions(),
    });
    expect(r.problems).toContainEqual(expect.objectContaining({ reason: 'InvalidNetworkAllow', fatal: true, field: 'spec.capabilities.network.allow[1]' }));
    expect(r.problems.find((p) => p.reason === 'InvalidNetworkAllow')!.message).toContain("a wildcard is '*.' before a domain of at least two labels");
  });
});

describe('hostname grants never open the cluster', () => {
  const spec = (allow: string[]) => ({
    artifacts: [{ name: 'd', version: '1.0.0', runtime: 'driver' as const }],
    inference: { driver: { artifact: 'd' }, model: 'm', endpoint: 'https://api.anthropic.com' },
    capabilities: { network: { allow } },
  });
  const egress = (allow: string[], over: Partial<ReturnType<typeof defaultOptions>> = {}) => {
    const r = translate({
      capsule: { apiVersion: 'murmur.io/v1alpha1', kind: 'Capsule', metadata: { name: 'c', namespace: 'ns', uid: 'u' }, spec: spec(allow) },
      hooks: {},
      secrets: {},
      callers: [],
      capsulePorts: {},
      options: defaultOptions(over),
    });
    return (r.objects.find((o) => o.metadata.name === 'c-egress') as any).spec.egress as Array<{
      to: Array<{ ipBlock?: { cidr: string; except?: string[] } }>;
      ports?: unknown[];
    }>;
  };
  it('by default the "any address" rule of a hostname grant cuts out the private, loopback and link-local ranges, both families', () => {
    const anyRule = egress(['api.example.com']).find((r) => r.to.some((t) => t.ipBlock?.cidr === '0.0.0.0/0'))!;
    expect(anyRule.to).toEqual([
      { ipBlock: { cidr: '0.0.0.0/0', except: PRIVATE_RANGES.filter((c) => !c.includes(':')) } },
      { ipBlock: { cidr: '::/0', except: PRIVATE_RANGES.filter((c) => c.includes(':')) } },
    ]);
    for (const c of ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16']) expect(anyRule.to[0]!.ipBlock!.except).toContain(c);
  });
  it('configured pod and service CIDRs outside those ranges are cut out too', () => {
    const anyRule = egress(['api.example.com'], { egressExcept: [...PRIVATE_RANGES, '203.0.113.0/24'] }).find((r) =>
      r.to.some((t) => t.ipBlock?.cidr === '0.0.0.0/0'),
    )!;
    expect(anyRule.to[0]!.ipBlock!.except).toContain('203.0.113.0/24');
  });
  it('a private address granted explicitly gets its own rule', () => {
    const rules = egress(['api.example.com', '10.1.2.3:5432']);
    expect(rules).toContainEqual({ to: [{ ipBlock: { cidr: '10.1.2.3/32' } }], ports: [{ protocol: 'TCP', port: 5432 }] });
  });
});

describe('the CRD admits network.allow entries by the one grammar', () => {
  it('its CEL rule is generated from the grammar’s fragments (wildcards included)', () => {
    const [rule] = allowEntryRules();
    const celLiteral = (re: string) => `'${re.replace(/\\/g, '\\\\')}'`;
    for (const p of [CAPSULE_PATTERN, CIDR_PORT_PATTERN, HOST_ENTRY_PATTERN, IPV4_SHAPED_PATTERN, IPV4_VALID_PATTERN])
      expect(rule!.rule).toContain(`self.matches(${celLiteral(p)})`);
    expect(HOST_ENTRY_PATTERN).toContain(WILDCARD);
    expect(rule!.messageExpression).toContain(WILDCARD_RULE);
  });
});
