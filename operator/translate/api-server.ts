/** Where capsule pods reach the API server (their TokenReview egress rule), from the operator's environment. */

const list = (v: string | undefined) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** API_SERVER_EGRESS (`cidr:port`, the port after the last colon) plus the in-cluster Service address. */
export function apiServerFromEnv(e: NodeJS.ProcessEnv): Array<{ cidr: string; port: number }> {
  const out = list(e.API_SERVER_EGRESS).map((d) => {
    const i = d.lastIndexOf(':');
    const port = Number(d.slice(i + 1));
    if (i <= 0 || !Number.isInteger(port) || port < 1 || port > 65535)
      throw new Error(`API_SERVER_EGRESS entry '${d}': expected <cidr>:<port>, e.g. 10.0.0.1/32:6443`);
    return { cidr: d.slice(0, i), port };
  });
  const host = e.KUBERNETES_SERVICE_HOST;
  const port = Number(e.KUBERNETES_SERVICE_PORT || 443);
  if (host) out.push({ cidr: host.includes(':') ? `${host}/128` : `${host}/32`, port });
  return out.filter((d, i) => out.findIndex((x) => x.cidr === d.cidr && x.port === d.port) === i);
}
