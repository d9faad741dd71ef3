/**
 * Usage-scraper settings from the operator's environment (the chart sets them):
 *   USAGE_SCRAPE_INTERVAL_SECONDS  default 60; 0 = off
 *   USAGE_SCRAPE_TIMEOUT_SECONDS   default 5
 *   USAGE_SCRAPE_CONCURRENCY       default 8
 *   POD_NAMESPACE, OPERATOR_POD_LABELS (k=v,...): who the scraper is, so capsule NetworkPolicies
 *   that restrict the metrics port (METRICS_FROM_NAMESPACES) admit it too.
 */
import type { NetworkPeer } from '../translate/options.ts';
import type { UsageOptions } from './scraper.ts';

export function usageFromEnv(env: Record<string, string | undefined>): { usage?: UsageOptions; usageScraper?: NetworkPeer } {
  const every = Number(env.USAGE_SCRAPE_INTERVAL_SECONDS || 60);
  if (!Number.isFinite(every) || every <= 0) return {};
  const peer = operatorPeer(env);
  return {
    usage: {
      intervalMs: every * 1000,
      timeoutMs: Number(env.USAGE_SCRAPE_TIMEOUT_SECONDS || 5) * 1000,
      concurrency: Number(env.USAGE_SCRAPE_CONCURRENCY || 8),
    },
    ...(peer ? { usageScraper: peer } : {}),
  };
}

/**
 * The operator's own pods as a NetworkPolicy peer (POD_NAMESPACE + OPERATOR_POD_LABELS), or
 * undefined outside a pod: capsule policies admit it where it reads the pods (metrics, and the
 * agent card of a capsule about to sleep).
 */
export function operatorPeer(env: Record<string, string | undefined>): NetworkPeer | undefined {
  if (!env.POD_NAMESPACE) return undefined;
  const labels = Object.fromEntries(
    (env.OPERATOR_POD_LABELS ?? '')
      .split(',')
      .map((kv) => kv.split('=').map((x) => x.trim()))
      .filter((kv): kv is [string, string] => kv.length === 2 && !!kv[0]),
  );
  return {
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': env.POD_NAMESPACE } },
    ...(Object.keys(labels).length ? { podSelector: { matchLabels: labels } } : {}),
  };
}
