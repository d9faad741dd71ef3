/**
 * The activator's pure parts, as tables: the NetworkPolicy ingress fence (Kubernetes semantics for
 * one port, operator/activator/fences.ts), the Host → Capsule route, the HTTP/2 preface sniff and
 * the binding's error shapes. The fence is also checked against the very policy the operator
 * renders (buildIngressPolicy), and the activator's copies of the operator's names against theirs.
 */
import { describe, expect, it } from 'vitest';
import type { Capsule } from '../../../operator/api/types.ts';
import { type NetworkPolicyView, type PolicyPeer, type Source, admitsSource, ipBlockAdmits } from '../../../operator/activator/fences.ts';
import { A2A_CONTAINER_PORT, ingressPolicyName } from '../../../operator/activator/gate.ts';
import { routeOf } from '../../../operator/activator/routing.ts';
import { sniffPreface } from '../../../runtime/contracts/h2c-preface.ts';
import { bindingOf, errorBody, refusal, rpcId } from '../../../operator/activator/errors.ts';
import { readyEndpoints, sleepEnabled, type EndpointSliceView } from '../../../operator/activator/endpoints.ts';
import { activatorEnv } from '../../../operator/activator/config.ts';
import { SLICE_CONTROLLER, SLICE_OPERATOR } from '../../../operator/activator/cache.ts';
import { ACTIVATOR_COMPONENT, WAKE_REASON } from '../../../operator/activator/wake.ts';
import { WAKE_FIELD_SELECTOR } from '../../../operator/controller/sleep.ts';
import { SLICE_MANAGER } from '../../../operator/translate/builders/activator-slice.ts';
import { A2A_PORT, names } from '../../../operator/translate/builders/common.ts';
import { buildIngressPolicy } from '../../../operator/translate/builders/networkpolicy.ts';
import { defaultOptions } from '../../../operator/translate/options.ts';

const A2A = { number: 8080, name: 'a2a' };
const NS_LABELS: Record<string, Record<string, string>> = {
  app: { 'kubernetes.io/metadata.name': 'app', team: 'blue' },
  other: { 'kubernetes.io/metadata.name': 'other', team: 'red' },
};
const lookup = { namespaceLabels: (ns: string) => NS_LABELS[ns] };

const pod = (namespace: string, labels: Record<string, string>, ip = '10.1.0.7'): Source => ({ ip, pod: { namespace, labels } });
const stranger = (ip: string): Source => ({ ip });

function policy(ingress: unknown[] | undefined): NetworkPolicyView {
  return { metadata: { name: 'cap-ingress', namespace: 'app' }, spec: { policyTypes: ['Ingress'], ...(ingress ? { ingress: ingress as never } : {}) } };
}
const rule = (from: PolicyPeer[] | undefined, ports?: unknown[]) => ({ ...(from ? { from } : {}), ...(ports ? { ports } : {}) });

describe('admitsSource: NetworkPolicy ingress semantics for the a2a port', () => {
  it.each<[string, NetworkPolicyView, Source, boolean]>([
    ['no ingress rules admit nobody', policy(undefined), pod('app', {}), false],
    ['an empty rule list admits nobody', policy([]), pod('app', {}), false],
    ['a rule without from admits every source', policy([rule(undefined)]), stranger('203.0.113.9'), true],
    ['a rule with an empty from admits every source', policy([rule([])]), stranger('203.0.113.9'), true],
    ['a rule for another port only does not admit', policy([rule(undefined, [{ protocol: 'TCP', port: 9090 }])]), pod('app', {}), false],
    ['a rule for the a2a port number admits', policy([rule(undefined, [{ protocol: 'TCP', port: 8080 }])]), pod('app', {}), true],
    ['a port without protocol is TCP', policy([rule(undefined, [{ port: 8080 }])]), pod('app', {}), true],
    ['a UDP rule does not admit TCP', policy([rule(undefined, [{ protocol: 'UDP', port: 8080 }])]), pod('app', {}), false],
    ['a named port a2a matches the container port of that name', policy([rule(undefined, [{ port: 'a2a' }])]), pod('app', {}), true],
    ['another named port does not', policy([rule(undefined, [{ port: 'metrics' }])]), pod('app', {}), false],
    ['a port range covering 8080 admits', policy([rule(undefined, [{ port: 8000, endPort: 8100 }])]), pod('app', {}), true],
    ['a port range beside 8080 does not', policy([rule(undefined, [{ port: 8081, endPort: 8100 }])]), pod('app', {}), false],
    ['a ports entry without port matches every port', policy([rule(undefined, [{ protocol: 'TCP' }])]), pod('app', {}), true],
    [
      'podSelector alone: a matching pod of the policy namespace',
      policy([rule([{ podSelector: { matchLabels: { role: 'caller' } } }])]),
      pod('app', { role: 'caller' }),
      true,
    ],
    [
      'podSelector alone: the same labels in another namespace',
      policy([rule([{ podSelector: { matchLabels: { role: 'caller' } } }])]),
      pod('other', { role: 'caller' }),
      false,
    ],
    ['podSelector alone: other labels', policy([rule([{ podSelector: { matchLabels: { role: 'caller' } } }])]), pod('app', { role: 'x' }), false],
    ['an empty podSelector: every pod of the policy namespace', policy([rule([{ podSelector: {} }])]), pod('app', { any: 'thing' }), true],
    [
      'namespaceSelector alone: every pod of a matching namespace',
      policy([rule([{ namespaceSelector: { matchLabels: { team: 'red' } } }])]),
      pod('other', {}),
      true,
    ],
    [
      'namespaceSelector alone: a namespace that does not match',
      policy([rule([{ namespaceSelector: { matchLabels: { team: 'red' } } }])]),
      pod('app', {}),
      false,
    ],
    ['an empty namespaceSelector: every namespace', policy([rule([{ namespaceSelector: {} }])]), pod('other', {}), true],
    ['a namespace nobody knows matches no namespaceSelector', policy([rule([{ namespaceSelector: {} }])]), pod('ghost', {}), false],
    [
      'namespaceSelector + podSelector: both match',
      policy([rule([{ namespaceSelector: { matchLabels: { team: 'red' } }, podSelector: { matchLabels: { role: 'caller' } } }])]),
      pod('other', { role: 'caller' }),
      true,
    ],
    [
      'namespaceSelector + podSelector: the namespace matches, the pod does not',
      policy([rule([{ namespaceSelector: { matchLabels: { team: 'red' } }, podSelector: { matchLabels: { role: 'caller' } } }])]),
      pod('other', { role: 'x' }),
      false,
    ],
    [
      'namespaceSelector + podSelector: the pod matches, the namespace does not',
      policy([rule([{ namespaceSelector: { matchLabels: { team: 'red' } }, podSelector: { matchLabels: { role: 'caller' } } }])]),
      pod('app', { role: 'caller' }),
      false,
    ],
    [
      'matchExpressions In',
      policy([rule([{ podSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['a', 'b'] }] } }])]),
      pod('app', { tier: 'b' }),
      true,
    ],
    [
      'matchExpressions In, value not listed',
      policy([rule([{ podSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['a'] }] } }])]),
      pod('app', { tier: 'b' }),
      false,
    ],
    [
      'matchExpressions In, label missing',
      policy([rule([{ podSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['a'] }] } }])]),
      pod('app', {}),
      false,
    ],
    [
      'matchExpressions NotIn',
      policy([rule([{ podSelector: { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['a'] }] } }])]),
      pod('app', { tier: 'a' }),
      false,
    ],
    [
      'matchExpressions NotIn, label missing matches',
      policy([rule([{ podSelector: { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['a'] }] } }])]),
      pod('app', {}),
      true,
    ],
    ['matchExpressions Exists', policy([rule([{ podSelector: { matchExpressions: [{ key: 'tier', operator: 'Exists' }] } }])]), pod('app', { tier: '' }), true],
    [
      'matchExpressions Exists, label missing',
      policy([rule([{ podSelector: { matchExpressions: [{ key: 'tier', operator: 'Exists' }] } }])]),
      pod('app', {}),
      false,
    ],
    [
      'matchExpressions DoesNotExist',
      policy([rule([{ podSelector: { matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] } }])]),
      pod('app', {}),
      true,
    ],
    [
      'matchExpressions DoesNotExist, label there',
      policy([rule([{ podSelector: { matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] } }])]),
      pod('app', { tier: 'a' }),
      false,
    ],
    [
      'an unknown operator matches nothing',
      policy([rule([{ podSelector: { matchExpressions: [{ key: 'tier', operator: 'Gt', values: ['1'] }] } }])]),
      pod('app', { tier: '2' }),
      false,
    ],
    [
      'matchLabels and matchExpressions are ANDed',
      policy([rule([{ podSelector: { matchLabels: { role: 'caller' }, matchExpressions: [{ key: 'tier', operator: 'Exists' }] } }])]),
      pod('app', { role: 'caller' }),
      false,
    ],
    ['ipBlock: an address inside the cidr', policy([rule([{ ipBlock: { cidr: '192.0.2.0/24' } }])]), stranger('192.0.2.10'), true],
    ['ipBlock: an address outside it', policy([rule([{ ipBlock: { cidr: '192.0.2.0/24' } }])]), stranger('198.51.100.1'), false],
    ['ipBlock: an address in an except', policy([rule([{ ipBlock: { cidr: '192.0.2.0/24', except: ['192.0.2.0/28'] } }])]), stranger('192.0.2.10'), false],
    ['ipBlock: a pod is matched by its address too', policy([rule([{ ipBlock: { cidr: '10.1.0.0/16' } }])]), pod('other', {}), true],
    ['ipBlock: an IPv6 cidr', policy([rule([{ ipBlock: { cidr: 'fd00::/64' } }])]), stranger('fd00::5'), true],
    ['ipBlock: an IPv6 cidr does not match IPv4', policy([rule([{ ipBlock: { cidr: '::/0' } }])]), stranger('192.0.2.1'), false],
    ['ipBlock: an IPv4-mapped IPv6 caller is its IPv4 address', policy([rule([{ ipBlock: { cidr: '127.0.0.1/32' } }])]), stranger('::ffff:127.0.0.1'), true],
    ['a source that is no known pod matches no pod selector', policy([rule([{ podSelector: {} }, { namespaceSelector: {} }])]), stranger('10.9.9.9'), false],
    ['peers are ORed', policy([rule([{ podSelector: { matchLabels: { role: 'x' } } }, { ipBlock: { cidr: '10.9.0.0/16' } }])]), stranger('10.9.9.9'), true],
    [
      'rules are ORed',
      policy([rule([{ podSelector: { matchLabels: { role: 'x' } } }]), rule([{ namespaceSelector: { matchLabels: { team: 'red' } } }], [{ port: 'a2a' }])]),
      pod('other', {}),
      true,
    ],
    [
      "a rule's peer admits only on that rule's ports",
      policy([rule([{ namespaceSelector: { matchLabels: { team: 'red' } } }], [{ port: 9090 }])]),
      pod('other', {}),
      false,
    ],
  ])('%s', (_name, p, source, want) => {
    expect(admitsSource(p, A2A, source, lookup)).toBe(want);
  });

  it('ipBlockAdmits refuses a malformed cidr rather than throwing', () => {
    expect(ipBlockAdmits({ cidr: '10.0.0.0/33' }, '10.0.0.1')).toBe(false);
    expect(ipBlockAdmits({ cidr: 'not-an-ip/8' }, '10.0.0.1')).toBe(false);
  });
});

describe("admitsSource on the operator's rendered ingress policy", () => {
  const capsule = (ns: string, name: string, spec: Capsule['spec'] = {}): Capsule => ({
    apiVersion: 'murmur.io/v1alpha1',
    kind: 'Capsule',
    metadata: { name, namespace: ns, uid: 'u1' },
    spec,
  });
  const opts = defaultOptions({ metricsFrom: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }] });
  const rendered = buildIngressPolicy(
    capsule('app', 'callee', { ingress: { from: [{ namespace: 'other', podSelector: { matchLabels: { role: 'client' } } }] } }),
    ['app/caller'],
    opts,
  );
  const labelsOf = (ns: string) => ({ 'kubernetes.io/metadata.name': ns });
  const look = { namespaceLabels: (ns: string) => labelsOf(ns) };

  it.each<[string, Source, boolean]>([
    ['a capsule that names this one (its allowlist)', pod('app', { 'murmur.io/capsule': 'caller' }), true],
    ['a pod spec.ingress admits', pod('other', { role: 'client' }), true],
    ['a pod of that namespace with other labels', pod('other', { role: 'server' }), false],
    ['Prometheus, admitted on the metrics port only', pod('monitoring', {}), false],
    ['an address that is no pod', stranger('203.0.113.1'), false],
  ])('%s', (_name, source, want) => {
    expect(admitsSource(rendered as unknown as NetworkPolicyView, A2A, source, look)).toBe(want);
  });

  it("the activator's slice manager and wake Event are the ones the operator renders and watches", () => {
    expect(SLICE_OPERATOR).toBe(SLICE_MANAGER);
    expect(SLICE_CONTROLLER).not.toBe(SLICE_MANAGER);
    expect(WAKE_FIELD_SELECTOR).toBe(`reason=${WAKE_REASON},source=${ACTIVATOR_COMPONENT}`);
  });

  it("the activator's names and port are the operator's", () => {
    const c = capsule('app', 'callee');
    expect(ingressPolicyName('callee')).toBe(names(c).ingress);
    expect(A2A_CONTAINER_PORT).toBe(A2A_PORT);
    expect(rendered.metadata.name).toBe(ingressPolicyName('callee'));
  });
});

describe('routeOf: Host / :authority → the Capsule Service', () => {
  it.each<[string | undefined, { service: string; namespace: string } | undefined]>([
    ['echo.team-a.svc.cluster.local:8080', { service: 'echo', namespace: 'team-a' }],
    ['echo.team-a.svc.cluster.local', { service: 'echo', namespace: 'team-a' }],
    ['echo.team-a.svc.cluster.local.', { service: 'echo', namespace: 'team-a' }],
    ['echo.team-a.svc:80', { service: 'echo', namespace: 'team-a' }],
    ['echo.team-a:8080', { service: 'echo', namespace: 'team-a' }],
    ['Echo.Team-A.SVC', { service: 'echo', namespace: 'team-a' }],
    ['echo', undefined],
    ['echo.team-a.svc.other.domain', undefined],
    ['10.0.0.1:8012', undefined],
    ['[fd00::1]:8012', undefined],
    ['', undefined],
    [undefined, undefined],
    ['-bad.team-a', undefined],
  ])('%s', (host, want) => expect(routeOf(host)).toEqual(want));
});

describe('sniffPreface: the h2c preface or HTTP/1.1', () => {
  const preface = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';
  it.each<[string, string | undefined]>([
    [preface, 'h2c'],
    [`${preface}\x00\x00`, 'h2c'],
    ['PRI * HTTP/2', undefined],
    ['P', undefined],
    ['POST / HTTP/1.1\r\n', 'http1'],
    ['GET / HTTP/1.1\r\n', 'http1'],
    ['PRI * HTTP/1.1\r\n', 'http1'],
  ])('%j', (head, want) => expect(sniffPreface(Buffer.from(head, 'latin1'))).toBe(want));
});

describe("errors in the binding's shape", () => {
  const r = refusal('wake_timeout', 503, 'waking', 'E-OP-064', 5);
  it('a POST on / is JSON-RPC and answers the request id', () => {
    expect(bindingOf('POST', '/')).toBe('jsonrpc');
    expect(bindingOf('POST', '/rest/message:send')).toBe('rest');
    expect(bindingOf('GET', '/')).toBe('rest');
    expect(errorBody(r, 'jsonrpc', rpcId(Buffer.from('{"jsonrpc":"2.0","id":7,"method":"x"}')))).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32603, message: 'waking [E-OP-064]', data: { retryAfterSeconds: 5 } },
    });
    expect(rpcId(Buffer.from('not json'))).toBeNull();
  });
  it('REST gets the status name', () => {
    expect(errorBody(r, 'rest')).toEqual({ error: { code: 503, status: 'UNAVAILABLE', message: 'waking [E-OP-064]', details: [{ retryAfterSeconds: 5 }] } });
  });
});

describe('ready endpoints and sleep-enabled Services', () => {
  const slice = (name: string, managedBy: string, endpoints: EndpointSliceView['endpoints'], port = 8080): EndpointSliceView => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace: 'app', labels: { 'kubernetes.io/service-name': 'cap', 'endpointslice.kubernetes.io/managed-by': managedBy } },
    endpoints,
    ports: [{ name: 'a2a', port }],
  });
  const ctl = 'endpointslice-controller.k8s.io';
  const op = 'capsule-operator.murmur.dev';
  it('only ready endpoints of the controller-managed slices count, never the activator slice', () => {
    const slices = [
      slice('cap-abc', ctl, [
        { addresses: ['10.0.0.1'], conditions: { ready: false } },
        { addresses: ['10.0.0.2'], conditions: { ready: true } },
        { addresses: ['10.0.0.3'] },
      ]),
      slice('cap-activator', op, [{ addresses: ['10.9.0.1'], conditions: { ready: true } }], 8012),
    ];
    expect(readyEndpoints(slices, ctl)).toEqual([
      { ip: '10.0.0.2', port: 8080 },
      { ip: '10.0.0.3', port: 8080 },
    ]);
    expect(sleepEnabled(slices, 'cap', op)).toBe(true);
    expect(sleepEnabled(slices.slice(0, 1), 'cap', op)).toBe(false);
  });
});

describe('activator configuration from the environment', () => {
  const KEY = { CAPSULE_ACTIVATOR_KEY: 'k'.repeat(32) };
  it('defaults', () => {
    expect(activatorEnv(KEY)).toEqual({
      port: 8012,
      metricsPort: 9090,
      holdSeconds: 60,
      namespaces: [],
      clusterDomain: 'cluster.local',
      apiKeyDigestKey: Buffer.from(KEY.CAPSULE_ACTIVATOR_KEY),
    });
  });
  it.each([
    [{ MURMUR_ACTIVATOR_HOLD_SECONDS: '0' }, /E-OP-060 MURMUR_ACTIVATOR_HOLD_SECONDS="0": want a whole number from 1 to 3600/],
    [{ MURMUR_ACTIVATOR_HOLD_SECONDS: '1.5' }, /MURMUR_ACTIVATOR_HOLD_SECONDS="1.5"/],
    [{ MURMUR_ACTIVATOR_PORT: '70000' }, /MURMUR_ACTIVATOR_PORT="70000"/],
    [{ WATCH_NAMESPACES: 'a,B_c' }, /E-OP-060 WATCH_NAMESPACES: "B_c" is not a namespace name/],
  ])('%j is refused by name', (env, want) => expect(() => activatorEnv({ ...KEY, ...env })).toThrow(want));
});
