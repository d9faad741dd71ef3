/**
 * The capsule Deployment: one runtime container, hardened (non-root, read-only root filesystem,
 * no privilege escalation, all capabilities dropped, seccomp RuntimeDefault), the manifest mounted
 * read-only, an emptyDir workdir, and a config hash on the pod template so any change to the
 * Capsule, its Hooks or its API-key Secret rolls the pods.
 */
import type { Capsule, Hook, KubeObject } from '../../api/types.ts';
import type { TranslateOptions } from '../options.ts';
import { a2aAuth, type A2AAuthFragments } from './a2a-auth.ts';
import { topologySpread } from './disruption.ts';
import { heapEnv } from './heap.ts';
import { storeClaimFragments } from './store-claim.ts';
import { TMP_SIZE, withEphemeralStorage, workdirSize } from './storage.ts';
import { A2A_PORT, ANNOTATION_CONFIG_HASH, CONFIG_DIR, METRICS_PORT, WORKDIR, labels, meta, names, selectorLabels } from './common.ts';

export const RUNTIME_UID = 65532;

/** `mur serve --drain-secs`: how long running tasks get after SIGTERM before they fail. */
export const DRAIN_SECS = 25;
/**
 * How long a stopping pod keeps serving as if nothing happened (its preStop hook) before the
 * runtime gets SIGTERM. A pod being deleted leaves its Service's endpoints at once, but each node's
 * Service proxy applies that a moment later: on the real node, under load, kube-proxy still sent a
 * new connection to a capsule's last pod 0.25 s after that pod had gone (a capsule going to sleep:
 * the caller's connect to the Service failed "No route to host" after 3 s of unanswered ARP for the
 * deleted pod's address). Until the proxies have caught up, the pod must still answer as usual:
 * the standard preStop pause (Knative keeps pods a grace period after routing to its activator for
 * the same reason). Rolling updates and scale-downs get the same cover.
 */
export const PRESTOP_SECS = 5;
/**
 * The preStop hook: the image's coreutils `sleep` (test/images checks it runs there as the pod's
 * user); an exec hook, not the `sleep` action, which needs Kubernetes 1.30 (the chart supports 1.28).
 */
export const PRESTOP_COMMAND = ['sleep', String(PRESTOP_SECS)];
/** The pod's grace period: above the pause plus the drain budget, so the kubelet never SIGKILLs a draining runtime. */
export const TERMINATION_GRACE_SECS = PRESTOP_SECS + DRAIN_SECS + 15;

/**
 * The runtime container's resources when the Capsule sets none (docs/operator.md). The CPU request
 * is what the scheduler reserves for every awake capsule, not a limit: a capsule mostly waits on
 * its provider (about 4 ms of CPU per one-turn task, none idle), and at 100m a 2-core node held
 * at most 17 awake capsules whatever their use, so a wake beyond that waited for another to sleep.
 */
export const DEFAULT_RESOURCES = { requests: { cpu: '25m', memory: '256Mi' }, limits: { memory: '1Gi' } };

/** Where OCI artifacts are mounted: `<dir>/<artifact name>/` (the runtime reads MURMUR_OCI_MOUNT_DIR). */
export const OCI_MOUNT_DIR = '/var/run/murmur/oci';

/**
 * `source: {oci}` artifacts become Kubernetes image volumes (pod `volumes[].image`, digest-pinned):
 * the kubelet pulls them with the cluster's pull secrets, so the runtime needs no registry
 * credentials and makes no registry request; it reads the component from the mount.
 */
export function ociVolumes(c: Capsule, hooks: readonly Hook[] = []): { volumes: Record<string, unknown>[]; mounts: Record<string, unknown>[] } {
  const volumes: Record<string, unknown>[] = [];
  const mounts: Record<string, unknown>[] = [];
  const add = (name: string, artifact: string, oci: string | undefined) => {
    if (!oci) return;
    volumes.push({ name, image: { reference: oci, pullPolicy: 'IfNotPresent' } });
    mounts.push({ name, mountPath: `${OCI_MOUNT_DIR}/${artifact}`, readOnly: true });
  };
  for (const [i, a] of (c.spec.artifacts ?? []).entries()) add(`oci-${i}`, a.name, a.source?.oci);
  // A Hook's OCI artifact the same way (artifact names are unique across artifacts and hooks).
  for (const [i, h] of hooks.entries()) add(`oci-hook-${i}`, h.spec.artifact.name, h.spec.artifact.source?.oci);
  return { volumes, mounts };
}

/**
 * The runtime container contract: `mur serve <manifest dir> --a2a-port --metrics-port --workdir`,
 * plus `--host 0.0.0.0` (the CLI binds 127.0.0.1 by default, unreachable from the Service and the
 * kubelet's probes), `--grpc-port same` (the gRPC binding on the a2a port itself, so the one Service
 * port carries JSON-RPC, HTTP+JSON and gRPC, and the activator's h2c forwarding to that port reaches
 * it) and `--public-url` (the Service URL the agent card advertises, gRPC at its host:port).
 * `auth`: the A2A authentication flags (a2a-auth.ts): `--token-review`, `--api-keys <dir>`, and
 * `--anonymous` only where the Capsule says so (off loopback `mur serve` refuses to start without
 * one of them) — and `--store sqlite:<file>` for the embedded store on a claim (store-claim.ts).
 */
export function runtimeArgs(publicUrl?: string, auth: string[] = []): string[] {
  return [
    'serve',
    CONFIG_DIR,
    '--a2a-port',
    String(A2A_PORT),
    '--metrics-port',
    String(METRICS_PORT),
    '--workdir',
    WORKDIR,
    '--host',
    '0.0.0.0',
    '--drain-secs',
    String(DRAIN_SECS),
    '--grpc-port',
    'same',
    ...auth,
    ...(publicUrl ? ['--public-url', publicUrl] : []),
  ];
}

const probe = (path: string, period: number, failures: number) => ({
  httpGet: { path, port: 'metrics' },
  periodSeconds: period,
  timeoutSeconds: 2,
  failureThreshold: failures,
});

/**
 * RollingUpdate starts the new pod before the old one ends (maxUnavailable 0). On a ReadWriteOnce
 * store claim that would deadlock when the new pod lands on another node (the volume stays attached
 * to the old pod, which is kept until the new one is ready), and on the same node two runtimes would
 * open one SQLite file, the newer failing the older's running tasks as "unfinished". Recreate ends
 * the old pod (its drain included) first: a moment without a pod on each rollout, as a claim must.
 */
export function deploymentStrategy(c: Capsule): Record<string, unknown> {
  if (c.spec.store?.embedded?.volumeClaim && (c.spec.replicas ?? 1) <= 1) return { type: 'Recreate' };
  return { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } };
}

/**
 * `hooks`: the Capsule's resolved Hooks (spec.hooks order), for their OCI image volumes; `auth`: a2a-auth.ts.
 * `storeEnv`: the store's env (translate/store.ts: MURMUR_STORE from its Secret for PostgreSQL; none for embedded).
 * `asleep`: the capsule sleeps (translate/sleep.ts): 0 replicas; spec.replicas is never written, so
 * /scale and an HPA keep their value for the wake.
 */
export function buildDeployment(
  c: Capsule,
  opts: TranslateOptions,
  configHash: string,
  publicUrl?: string,
  hooks: readonly Hook[] = [],
  auth: A2AAuthFragments = a2aAuth(c, [], []),
  storeEnv: Record<string, unknown>[] = [],
  asleep = false,
): KubeObject {
  const n = names(c);
  const env: Record<string, unknown>[] = [
    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    // The root filesystem is read-only: everything the runtime keeps under ~ (spend ledger,
    // conversations) and the fetched-artifact cache go to the workdir volume.
    { name: 'HOME', value: WORKDIR },
    { name: 'MURMUR_CACHE_DIR', value: `${WORKDIR}/cache` },
  ];
  env.push(...storeEnv);
  const resources = withEphemeralStorage(c, c.spec.resources ?? DEFAULT_RESOURCES);
  env.push(...heapEnv(resources));
  const oci = ociVolumes(c, hooks);
  const claim = storeClaimFragments(c);
  if (oci.volumes.length) env.push({ name: 'MURMUR_OCI_MOUNT_DIR', value: OCI_MOUNT_DIR });
  const key = c.spec.inference?.apiKeySecretRef;
  if (key) env.push({ name: 'MURMUR_INFERENCE_API_KEY', valueFrom: { secretKeyRef: { name: key.name, key: key.key } } });
  env.push(...auth.env);
  if (opts.otlp) {
    env.push({ name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: opts.otlp.endpoint });
    if (opts.otlp.headersSecret) {
      env.push({ name: 'OTEL_EXPORTER_OTLP_HEADERS', valueFrom: { secretKeyRef: { ...opts.otlp.headersSecret, optional: true } } });
    }
  }
  const pullPolicy = c.spec.imagePullPolicy ?? opts.imagePullPolicy;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(c, n.deployment),
    spec: {
      replicas: asleep ? 0 : (c.spec.replicas ?? 1),
      revisionHistoryLimit: 3,
      selector: { matchLabels: selectorLabels(c) },
      strategy: deploymentStrategy(c),
      template: {
        metadata: {
          labels: labels(c),
          annotations: {
            [ANNOTATION_CONFIG_HASH]: configHash,
            'prometheus.io/scrape': 'true',
            'prometheus.io/port': String(METRICS_PORT),
            'prometheus.io/path': '/metrics',
          },
        },
        spec: {
          serviceAccountName: n.serviceAccount,
          automountServiceAccountToken: false,
          // preStop (PRESTOP_SECS) first; then /readyz turns 503 and new tasks get a retryable 503 the moment SIGTERM lands.
          terminationGracePeriodSeconds: TERMINATION_GRACE_SECS,
          enableServiceLinks: false,
          topologySpreadConstraints: topologySpread(c),
          securityContext: {
            runAsNonRoot: true,
            runAsUser: RUNTIME_UID,
            runAsGroup: RUNTIME_UID,
            fsGroup: RUNTIME_UID,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: 'runtime',
              image: c.spec.image ?? opts.image,
              ...(pullPolicy ? { imagePullPolicy: pullPolicy } : {}),
              args: runtimeArgs(publicUrl, [...auth.args, ...claim.args]),
              // the runtime's own refusal (it names the field) becomes the termination message the operator reports
              terminationMessagePolicy: 'FallbackToLogsOnError',
              ports: [
                { name: 'a2a', containerPort: A2A_PORT, protocol: 'TCP' },
                { name: 'metrics', containerPort: METRICS_PORT, protocol: 'TCP' },
              ],
              env,
              resources,
              // Every second: a pod counts as ready (Service endpoints, the activator's held
              // requests, kubectl wait) at the first probe after the runtime serves, ~0.35 s
              // after its start; at 5 s a probe that ran just before serving cost up to 5 s of a
              // wake or an apply. A probe is one GET on the metrics port (not counted as activity).
              readinessProbe: probe('/readyz', 1, 3),
              livenessProbe: { ...probe('/healthz', 10, 6), initialDelaySeconds: 5 },
              lifecycle: { preStop: { exec: { command: PRESTOP_COMMAND } } },
              securityContext: {
                runAsNonRoot: true,
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                privileged: false,
                capabilities: { drop: ['ALL'] },
                seccompProfile: { type: 'RuntimeDefault' },
              },
              volumeMounts: [
                { name: 'manifest', mountPath: CONFIG_DIR, readOnly: true },
                { name: 'workdir', mountPath: WORKDIR },
                { name: 'tmp', mountPath: '/tmp' },
                ...claim.mounts,
                ...oci.mounts,
                ...auth.mounts,
              ],
            },
          ],
          volumes: [
            { name: 'manifest', configMap: { name: n.configMap, items: [{ key: 'murmur.yaml', path: 'murmur.yaml' }] } },
            { name: 'workdir', emptyDir: { sizeLimit: workdirSize(c) } },
            { name: 'tmp', emptyDir: { sizeLimit: TMP_SIZE } },
            ...claim.volumes,
            ...oci.volumes,
            ...auth.volumes,
          ],
        },
      },
    },
  };
}
