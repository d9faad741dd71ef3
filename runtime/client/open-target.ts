/**
 * From what the user typed to a connected agent: an A2A URL is used as it is; a Capsule is read
 * from the cluster (Ready, `status.a2aUrl`), a token for its URL requested (unless an API key is
 * given: API-key capsules), and its Service reached through a port-forward this opens; `close()`
 * ends the forward.
 */
import { readApiKey } from './api-key.ts';
import { connectAgent, type AgentConnection, type TransportName } from './connect.ts';
import { capsuleToken, resolveCapsule } from './capsule-target.ts';
import { contextNamespace, loadKubeConfig } from './kubeconfig.ts';
import { openForward, servicePod } from './port-forward.ts';
import { parseTarget } from './target.ts';

// A token lives as long as a command may: an hour covers a long `mur chat` (the API server's
// floor is 10 minutes; the token is bound to nothing, so a shorter life is the only bound on a leak).
const TOKEN_SECONDS = 3600;

export interface TargetOptions {
  target: string | undefined;
  namespace?: string;
  kubeconfig?: string;
  context?: string;
  serviceAccount?: string;
  apiKeyFile?: string;
  transport?: TransportName;
  /** Tells what was done to reach a Capsule (forward opened, token requested). */
  note?: (s: string) => void;
}

export interface OpenTarget {
  conn: AgentConnection;
  /** What the user would call it: the URL, or `capsule/<name> (<ns>)`. */
  label: string;
  close(): Promise<void>;
}

export async function openTarget(o: TargetOptions): Promise<OpenTarget> {
  const target = parseTarget(o.target, o.namespace);
  const apiKey = readApiKey(o.apiKeyFile);
  if (target.kind === 'url') {
    const conn = await connectAgent({ url: target.url, ...(apiKey ? { bearer: apiKey } : {}), ...(o.transport ? { transport: o.transport } : {}) });
    return { conn, label: target.url, close: async () => {} };
  }
  const kc = loadKubeConfig({ ...(o.kubeconfig ? { file: o.kubeconfig } : {}), ...(o.context ? { context: o.context } : {}) });
  const namespace = target.namespace ?? contextNamespace(kc);
  const capsule = await resolveCapsule(kc, target.name, namespace);
  const bearer = apiKey ?? (await capsuleToken(kc, capsule, o.serviceAccount ?? 'default', TOKEN_SECONDS));
  const { pod, port } = await servicePod(kc, capsule.a2aUrl, namespace);
  const fwd = await openForward(kc, namespace, pod, port);
  o.note?.(`capsule/${capsule.name} (${namespace}): ${capsule.a2aUrl} through a port-forward to pod ${pod} at ${fwd.url}`);
  try {
    const name = `capsule/${capsule.name} (${namespace}) through the port-forward to pod ${pod}`;
    const conn = await connectAgent({
      url: fwd.url,
      name,
      detail: fwd.lastError,
      bearer,
      reachVia: { advertised: capsule.a2aUrl, local: fwd.url },
      ...(o.transport ? { transport: o.transport } : {}),
    });
    return { conn, label: `capsule/${capsule.name} (${namespace})`, close: () => fwd.close() };
  } catch (e) {
    await fwd.close();
    throw e;
  }
}
