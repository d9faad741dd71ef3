/**
 * Which Capsule a request is for. Callers keep calling the Capsule's Service by name, and kube-proxy
 * sends them here while no capsule pod is ready, so the name they used is the route: the Host
 * header (HTTP/1.1) or `:authority` (h2c gRPC), `<service>.<ns>.svc[.<cluster domain>][:port]`
 * or `<service>.<ns>[:port]`. A bare `<service>` (a caller in the same namespace) cannot be told
 * apart from another namespace's Service of that name, so it is not a route.
 */
export interface Route {
  namespace: string;
  service: string;
}

/** RFC 1123 label: what a Service and a namespace name are. */
const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function routeOf(host: string | undefined, clusterDomain = 'cluster.local'): Route | undefined {
  if (!host) return undefined;
  let name = host.trim().toLowerCase();
  if (name.startsWith('[')) return undefined; // an IPv6 literal names no Service
  name = name.replace(/:\d+$/, '').replace(/\.$/, '');
  const suffixes = [`.svc.${clusterDomain}`, '.svc', ''];
  for (const s of suffixes) {
    if (s && !name.endsWith(s)) continue;
    const parts = name.slice(0, name.length - s.length).split('.');
    if (parts.length !== 2) continue;
    const [service, namespace] = parts as [string, string];
    if (LABEL.test(service) && LABEL.test(namespace)) return { service, namespace };
  }
  return undefined;
}
