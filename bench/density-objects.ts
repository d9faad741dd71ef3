/**
 * The objects bench/density.ts applies to the real node: the density Capsules (the quickstart's
 * shape, examples/k8s/quickstart.yaml, read from the file, plus what lets them sleep), a static
 * hostPath PersistentVolume per Capsule for its store's claim (the node has no provisioner; as
 * test/realnode/sleep.test.ts does it), and the client pod that times the wakes from inside the
 * cluster (bench/density-client.mjs).
 */
import { chmodSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from '../test/cluster/node/config.ts';

export const NS = 'density';
/** On every Capsule and PersistentVolume of the bench (`kubectl … -l bench=density`). */
export const BENCH_LABEL = 'bench';
/** The wave a Capsule was applied in (`kubectl wait capsule -l density-wave=<i>`). */
export const WAVE_LABEL = 'density-wave';
export const CLIENT_POD = 'density-client';
export const CLIENT_ROLE = 'density-client';

export const capsuleName = (i: number): string => `d-${i}`;
export const capsuleUrl = (name: string): string => `http://${name}.${NS}.svc.cluster.local:8080`;
const pvName = (capsule: string): string => `${NS}-${capsule}-store`;

export interface CapsuleOptions {
  wave: number;
  /** spec.sleep.afterIdle */
  idle: string;
  /** The scripted provider's URL as pods reach it (host-services.ts forwardIntoNode). */
  endpoint: string;
}

/** A density Capsule: the quickstart's spec, its provider the scripted one, anonymous callers with the client's label, asleep after `idle`. */
export function capsule(name: string, o: CapsuleOptions): Record<string, unknown> {
  // biome-ignore lint/suspicious/noExplicitAny: the example's YAML, as written
  const quickstart = parse(readFileSync(join(repoRoot, 'examples/k8s/quickstart.yaml'), 'utf8')) as any;
  return {
    apiVersion: quickstart.apiVersion,
    kind: 'Capsule',
    metadata: { name, namespace: NS, labels: { [BENCH_LABEL]: NS, [WAVE_LABEL]: String(o.wave) } },
    spec: {
      ...quickstart.spec,
      inference: { ...quickstart.spec.inference, endpoint: o.endpoint },
      a2a: { auth: { anonymous: true } },
      ingress: { from: [{ podSelector: { matchLabels: { role: CLIENT_ROLE } } }] },
      store: { embedded: { volumeClaim: {} } },
      sleep: { afterIdle: o.idle },
    },
  };
}

/**
 * A static PersistentVolume on a fresh folder of the node (under its state directory, removed with
 * the node), reserved (claimRef) for the claim `<capsule>-store` the operator makes.
 */
export function storeVolume(capsuleName: string, nodeState: string): Record<string, unknown> {
  const name = pvName(capsuleName);
  const dir = join(nodeState, 'volumes', name);
  rmSync(dir, { recursive: true, force: true }); // an earlier run's SQLite file would be this run's store
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o777); // the runtime runs as 65532; a hostPath volume gets no fsGroup
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, labels: { [BENCH_LABEL]: NS } },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: '',
      claimRef: { namespace: NS, name: `${capsuleName}-store` },
      hostPath: { path: dir, type: 'Directory' },
    },
  };
}

/** The client pod: bench/density-client.mjs on the runtime image's Node, with the capsules to wake. */
export function clientPod(image: string, sequential: string[], concurrent: string[]): Record<string, unknown> {
  const script = readFileSync(join(repoRoot, 'bench/density-client.mjs'), 'utf8');
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: CLIENT_POD, namespace: NS, labels: { role: CLIENT_ROLE } },
    spec: {
      terminationGracePeriodSeconds: 0,
      automountServiceAccountToken: false,
      restartPolicy: 'Never',
      securityContext: { runAsNonRoot: true, runAsUser: 65532 },
      containers: [
        {
          name: 'client',
          image,
          imagePullPolicy: 'Never',
          command: ['node', '-e', script],
          env: [
            { name: 'SEQUENTIAL', value: JSON.stringify(sequential.map(capsuleUrl)) },
            { name: 'CONCURRENT', value: JSON.stringify(concurrent.map(capsuleUrl)) },
          ],
        },
      ],
    },
  };
}

/** Objects as one `kubectl apply -f -` input. */
export const list = (items: Record<string, unknown>[]): string => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
