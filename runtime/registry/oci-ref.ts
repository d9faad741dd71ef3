/**
 * OCI references, `<registry>/<repo>[:<tag>][@sha256:<hex>]`: parsed and printed here, apart from
 * the client (oci.ts), so that staging and murmur.lock read a capsule's `source.oci` without
 * loading the client and the TLS stack it pulls in (node:https, node:tls: ≈ 3 MiB of a serving
 * process's RSS, docs/runtime.md) — a capsule whose OCI artifacts are cached or mounted never
 * loads them.
 */
export interface OciRef {
  registry: string;
  repository: string;
  tag?: string;
  /** `sha256:<hex>` of the manifest. */
  digest?: string;
  raw: string;
}

const REF_RE =
  /^([a-zA-Z0-9.-]+(?::[0-9]+)?|\[[0-9a-fA-F:]+\](?::[0-9]+)?)\/([a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)(?::([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(?:@(sha256:[0-9a-f]{64}))?$/;

/** Parses `<registry>/<repo>[:<tag>][@sha256:<hex>]`; undefined when malformed. */
export function parseOciRef(raw: string): OciRef | undefined {
  const m = REF_RE.exec(raw.replace(/^oci:\/\//, ''));
  if (!m) return undefined;
  return { registry: m[1]!, repository: m[2]!, ...(m[3] ? { tag: m[3] } : {}), ...(m[4] ? { digest: m[4] } : {}), raw };
}

export function formatOciRef(r: OciRef): string {
  return `${r.registry}/${r.repository}${r.tag ? `:${r.tag}` : ''}${r.digest ? `@${r.digest}` : ''}`;
}
