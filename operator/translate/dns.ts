/**
 * Where cluster DNS lives, for the egress rule every capsule NetworkPolicy opens on port 53. The
 * default is kube-system's `k8s-app=kube-dns` (CoreDNS in kubeadm, kind, GKE, EKS, AKS); clusters
 * that run it elsewhere (OpenShift's openshift-dns, NodeLocal DNSCache) set DNS_NAMESPACE and
 * DNS_POD_LABELS (the chart's `network.dns`). An empty DNS_POD_LABELS admits every pod of the
 * namespace.
 */
import type { NetworkPeer } from './options.ts';

/** `k=v,k2=v2` → labels; a malformed pair is an error naming the variable, so a typo never opens DNS wide. */
export function parseLabels(name: string, v: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([A-Za-z0-9][-A-Za-z0-9_./]*)=([-A-Za-z0-9_.]*)$/.exec(pair);
    if (!m) throw new Error(`${name}: '${pair}' is not a label pair; write key=value, comma-separated (e.g. k8s-app=kube-dns)`);
    out[m[1]!] = m[2]!;
  }
  return out;
}

export function dnsFromEnv(env: Record<string, string | undefined>): NetworkPeer {
  const ns = env.DNS_NAMESPACE?.trim() || 'kube-system';
  const labels = env.DNS_POD_LABELS === undefined ? { 'k8s-app': 'kube-dns' } : parseLabels('DNS_POD_LABELS', env.DNS_POD_LABELS);
  return {
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
    ...(Object.keys(labels).length ? { podSelector: { matchLabels: labels } } : { podSelector: {} }),
  };
}
