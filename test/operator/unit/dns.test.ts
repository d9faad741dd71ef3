import { describe, expect, it } from 'vitest';
import { dnsFromEnv, parseLabels } from '../../../operator/translate/dns.ts';

describe('cluster DNS peer for capsule egress', () => {
  it('defaults to kube-system k8s-app=kube-dns', () => {
    expect(dnsFromEnv({})).toEqual({
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
      podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
    });
  });

  it('follows DNS_NAMESPACE and DNS_POD_LABELS (OpenShift), and an empty label list admits the whole namespace', () => {
    expect(dnsFromEnv({ DNS_NAMESPACE: 'openshift-dns', DNS_POD_LABELS: 'dns.operator.openshift.io/daemonset-dns=default' })).toEqual({
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'openshift-dns' } },
      podSelector: { matchLabels: { 'dns.operator.openshift.io/daemonset-dns': 'default' } },
    });
    expect(dnsFromEnv({ DNS_NAMESPACE: 'dns', DNS_POD_LABELS: '' }).podSelector).toEqual({});
  });

  it('a malformed label pair is an error naming the variable (a typo never opens DNS wide)', () => {
    expect(() => parseLabels('DNS_POD_LABELS', 'k8s-app:kube-dns')).toThrow(/DNS_POD_LABELS: 'k8s-app:kube-dns' is not a label pair; write key=value/);
    expect(parseLabels('X', ' a=b , c=d ')).toEqual({ a: 'b', c: 'd' });
  });
});
