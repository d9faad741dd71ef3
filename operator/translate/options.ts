/** Operator-wide settings that shape every capsule's objects (from the chart's values via env). */
export interface NetworkPeer {
  namespaceSelector?: { matchLabels?: Record<string, string> };
  podSelector?: { matchLabels?: Record<string, string> };
  ipBlock?: { cidr: string; except?: string[] };
}

export interface TranslateOptions {
  /** Runtime image used when a Capsule gives none. */
  image: string;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** OTLP settings passed to every capsule as OTEL_EXPORTER_OTLP_* env. */
  otlp?: { endpoint: string; headersSecret?: { name: string; key: string } };
  /** Where DNS lives (egress rule on 53/UDP+TCP). */
  dns: NetworkPeer;
  /** CIDRs excluded from the "any address on this port" rule that hostname entries need. */
  egressExcept: string[];
  /** Who may scrape the metrics port; undefined = any source (the port carries only metrics). */
  metricsFrom?: NetworkPeer[];
  /**
   * The operator's own pods, which scrape the metrics port for status.usage: admitted there in
   * addition to metricsFrom (with metricsFrom undefined every source is admitted anyway).
   */
  usageScraper?: NetworkPeer;
  /** Cluster DNS domain for peer URLs. */
  clusterDomain: string;
}

export const DEFAULT_RUNTIME_IMAGE = 'ghcr.io/capsule-operator/runtime:0.1.0';

export function defaultOptions(over: Partial<TranslateOptions> = {}): TranslateOptions {
  return {
    image: DEFAULT_RUNTIME_IMAGE,
    dns: {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
      podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
    },
    egressExcept: [],
    clusterDomain: 'cluster.local',
    ...over,
  };
}
