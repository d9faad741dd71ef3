/**
 * What `mur send|chat|tasks <target>` names: an A2A URL, or a Capsule in a cluster
 * (`capsule/<name>`, the namespace from `-n`/`--namespace` or the kubeconfig's context).
 */
import { MurError } from '../errors.ts';

export type Target = { kind: 'url'; url: string } | { kind: 'capsule'; name: string; namespace?: string };

// The spellings kubectl accepts for the resource (`kubectl get capsule/x`, `capsules/x`, and the
// fully qualified `capsules.murmur.io/x`).
const CAPSULE_KINDS = new Set(['capsule', 'capsules', 'capsule.murmur.io', 'capsules.murmur.io']);
// A Kubernetes object name (RFC 1123 subdomain).
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

export function parseTarget(raw: string | undefined, namespace?: string): Target {
  if (!raw) {
    throw new MurError('E-CLI-030', 'no target: name an A2A URL or a Capsule', {
      hint: 'mur send http://127.0.0.1:8080/ "…"  or  mur send capsule/assistant -n team-a "…"',
    });
  }
  if (/^https?:\/\//i.test(raw)) {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new MurError('E-CLI-030', `target '${raw}' is not a valid URL`, { hint: 'write it as http(s)://host[:port]/' });
    }
    if (url.username || url.password) {
      throw new MurError('E-CLI-030', `target '${url.protocol}//${url.host}…' carries credentials in the URL`, {
        hint: 'pass an API key with --api-key-file or $MURMUR_A2A_API_KEY instead',
      });
    }
    return { kind: 'url', url: url.href };
  }
  const slash = raw.indexOf('/');
  const kind = slash > 0 ? raw.slice(0, slash).toLowerCase() : '';
  const name = raw.slice(slash + 1);
  if (!CAPSULE_KINDS.has(kind)) {
    throw new MurError('E-CLI-030', `target '${raw}' is neither an http(s) URL nor capsule/<name>`, {
      hint: 'mur send http://127.0.0.1:8080/ "…"  or  mur send capsule/assistant -n team-a "…"',
    });
  }
  if (!NAME.test(name)) {
    throw new MurError('E-CLI-030', `target '${raw}': '${name}' is not a Kubernetes object name`, { hint: 'lower-case letters, digits, "-" and "."' });
  }
  return { kind: 'capsule', name, ...(namespace ? { namespace } : {}) };
}
