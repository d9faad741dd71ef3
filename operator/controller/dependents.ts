/**
 * Which Capsules depend on which, kept from the Capsule events: a callee's ingress policy lists its
 * callers, and a caller renders its peers' URLs (their Service port) and projects them tokens
 * (unless a peer takes none). The controller asks this who to tell when a Capsule changes, and
 * hands translate the callers, ports and no-token peers it reads.
 */
import type { CapsuleSpec } from '../api/types.ts';
import { peerKeys } from '../translate/network.ts';

/** What one Capsule event changed in the graph. */
export interface DependentsChange {
  /** The peers it named before and after (`<ns>/<name>`). */
  before: Set<string>;
  after: Set<string>;
  /** Its port or its taking of tokens changed: its callers render it anew. */
  moved: boolean;
}

export class Dependents {
  private peersOf = new Map<string, Set<string>>();
  private callersOf = new Map<string, Set<string>>();
  /** Service port of every known capsule, by key: translate's `capsulePorts` (read live). */
  readonly ports: Record<string, number> = {};
  /** Capsules that take no ServiceAccount tokens (a2a.auth.serviceAccounts: false): their callers get none projected. */
  readonly noTokens = new Set<string>();

  /** Records a Capsule's version (`spec` undefined: deleted). */
  update(key: string, ns: string, spec: CapsuleSpec | undefined, clusterDomain: string): DependentsChange {
    const before = this.peersOf.get(key) ?? new Set<string>();
    const after = new Set(spec ? peerKeys(ns, spec, clusterDomain, () => true) : []);
    for (const t of before) if (!after.has(t)) this.callersOf.get(t)?.delete(key);
    for (const t of after) {
      if (!this.callersOf.has(t)) this.callersOf.set(t, new Set());
      this.callersOf.get(t)!.add(key);
    }
    if (after.size) this.peersOf.set(key, after);
    else this.peersOf.delete(key);
    const portBefore = this.ports[key];
    const tokensBefore = !this.noTokens.has(key);
    if (!spec) delete this.ports[key];
    else this.ports[key] = spec.servicePort ?? 8080;
    if (spec && spec.a2a?.auth?.serviceAccounts === false) this.noTokens.add(key);
    else this.noTokens.delete(key);
    return { before, after, moved: portBefore !== this.ports[key] || tokensBefore !== !this.noTokens.has(key) };
  }

  /** Keys of the Capsules whose allowlist names `key` (some may no longer exist). */
  callers(key: string): string[] {
    return [...(this.callersOf.get(key) ?? [])];
  }
}
