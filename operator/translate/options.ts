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
  /**
   * CIDRs excluded from the "any address on this port" rule that hostname entries need: by default
   * the private, shared, loopback and link-local ranges (where pod and service CIDRs live, and the
   * cloud metadata address), plus any pod/service CIDRs configured outside them. A capsule that
   * grants such an address explicitly (an IP or CIDR entry) gets its own rule for it.
   */
  egressExcept: string[];
  /** Who may scrape the metrics port; undefined = any source (the port carries only metrics). */
  metricsFrom?: NetworkPeer[];
  /**
   * The operator's own pods, which scrape the metrics port for status.usage: admitted there in
   * addition to metricsFrom (with metricsFrom undefined every source is admitted anyway).
   */
  usageScraper?: NetworkPeer;
  /**
   * Where the API server is, for the egress rule capsule pods need to verify callers' ServiceAccount
   * tokens (TokenReview): its endpoints and the `kubernetes` Service address, each a CIDR and port.
   */
  apiServer?: Array<{ cidr: string; port: number }>;
  /** Cluster DNS domain for peer URLs. */
  clusterDomain: string;
  /**
   * The activator the chart installed (operator/activator/): where its pods are and the port they
   * hold requests on. Absent: no activator, so no Capsule sleeps (its Sleeping condition says so).
   */
  activator?: ActivatorOptions;
}

export interface ActivatorOptions {
  /** The operator's (and the activator's) namespace. */
  namespace: string;
  /** Labels of the activator's pods (the NetworkPolicy peer that may reach a sleep-enabled capsule's a2a port). */
  podLabels: Record<string, string>;
  /** The activator's port (8012): the port of the `<capsule>-activator` EndpointSlice. */
  port: number;
}

/** Never reachable through a hostname grant unless granted explicitly (RFC 1918, 6598, 3927, 4193, loopback). */
export const PRIVATE_RANGES: readonly string[] = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.64.0.0/10',
  '169.254.0.0/16',
  '127.0.0.0/8',
  'fc00::/7',
  'fe80::/10',
  '::1/128',
];

export const DEFAULT_RUNTIME_IMAGE = 'ghcr.io/capsule-operator/runtime:0.1.0';

export function defaultOptions(over: Partial<TranslateOptions> = {}): TranslateOptions {
  return {
    image: DEFAULT_RUNTIME_IMAGE,
    dns: {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
      podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
    },
    egressExcept: [...PRIVATE_RANGES],
    clusterDomain: 'cluster.local',
    ...over,
  };
}
