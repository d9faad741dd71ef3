/**
 * Where the activator is, from the operator's environment (the chart sets these when it installs
 * the activator, templates/deployment.yaml):
 *   CAPSULE_ACTIVATOR_SERVICE     its Service (`<release>-activator`); unset = no activator: no Capsule sleeps
 *   CAPSULE_ACTIVATOR_NAMESPACE   the Service's and pods' namespace (default POD_NAMESPACE)
 *   CAPSULE_ACTIVATOR_PORT        the port it holds requests on (default 8012)
 *   CAPSULE_ACTIVATOR_POD_LABELS  k=v,... labels of its pods (the NetworkPolicy peer capsules admit)
 * A bad value stops the operator at start with the variable, the value and the fix: a half
 * configured activator would otherwise put Capsules to sleep that nothing can wake.
 */
import type { ActivatorOptions } from '../translate/options.ts';

export interface ActivatorConfig {
  /** For translate: the EndpointSlice port and the NetworkPolicy peer. */
  activator: ActivatorOptions;
  /** The activator's own Service, whose EndpointSlices give its pod IPs. */
  service: { namespace: string; name: string };
}

export const DEFAULT_ACTIVATOR_PORT = 8012;

export class ActivatorConfigError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(`${message} [${code}]`);
    this.name = 'ActivatorConfigError';
  }
}

// A label key: an optional DNS-subdomain prefix and a name (Kubernetes' own rule, shortened).
const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** `k=v,k2=v2` → labels; throws E-OP-071 naming the entry (by index) that is not one. */
export function parsePodLabels(raw: string, variable: string): Record<string, string> {
  const out: Record<string, string> = {};
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  entries.forEach((kv, i) => {
    const eq = kv.indexOf('=');
    const k = eq < 0 ? kv : kv.slice(0, eq).trim();
    const v = eq < 0 ? '' : kv.slice(eq + 1).trim();
    if (eq < 0 || !LABEL_KEY.test(k) || !LABEL_VALUE.test(v) || v.length > 63)
      throw new ActivatorConfigError('E-OP-071', `${variable} entry ${i} '${kv}' is not a label key=value (e.g. app.kubernetes.io/name=capsule-activator)`);
    out[k] = v;
  });
  if (!entries.length)
    throw new ActivatorConfigError('E-OP-071', `${variable} is empty: give the activator pods' labels as k=v,... so capsule NetworkPolicies can admit them`);
  return out;
}

/** The activator's settings, undefined when none is installed; throws ActivatorConfigError on a bad value. */
export function activatorFromEnv(env: Record<string, string | undefined>): ActivatorConfig | undefined {
  const name = env.CAPSULE_ACTIVATOR_SERVICE?.trim();
  const others = ['CAPSULE_ACTIVATOR_NAMESPACE', 'CAPSULE_ACTIVATOR_PORT', 'CAPSULE_ACTIVATOR_POD_LABELS'].filter((k) => env[k]?.trim());
  if (!name) {
    if (others.length)
      throw new ActivatorConfigError(
        'E-OP-072',
        `${others.join(', ')} set without CAPSULE_ACTIVATOR_SERVICE: name the activator's Service (the chart's <release>-activator), or unset them to run without sleeping Capsules`,
      );
    return undefined;
  }
  if (!DNS_LABEL.test(name)) throw new ActivatorConfigError('E-OP-072', `CAPSULE_ACTIVATOR_SERVICE '${name}' is not a Service name (a DNS label)`);
  const namespace = env.CAPSULE_ACTIVATOR_NAMESPACE?.trim() || env.POD_NAMESPACE?.trim();
  if (!namespace)
    throw new ActivatorConfigError('E-OP-072', 'CAPSULE_ACTIVATOR_NAMESPACE is not set (nor POD_NAMESPACE): give the namespace of the activator Service');
  if (!DNS_LABEL.test(namespace))
    throw new ActivatorConfigError('E-OP-072', `CAPSULE_ACTIVATOR_NAMESPACE '${namespace}' is not a namespace name (a DNS label)`);
  const rawPort = env.CAPSULE_ACTIVATOR_PORT?.trim();
  const port = rawPort ? Number(rawPort) : DEFAULT_ACTIVATOR_PORT;
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new ActivatorConfigError(
      'E-OP-070',
      `CAPSULE_ACTIVATOR_PORT '${rawPort}' is not a TCP port (1-65535); the activator listens on ${DEFAULT_ACTIVATOR_PORT} by default`,
    );
  const podLabels = parsePodLabels(env.CAPSULE_ACTIVATOR_POD_LABELS ?? '', 'CAPSULE_ACTIVATOR_POD_LABELS');
  return { activator: { namespace, podLabels, port }, service: { namespace, name } };
}
