/**
 * A local port that reaches a capsule's Service the way `kubectl port-forward svc/…` does: a
 * ready pod behind the Service, the container port its A2A port targets, and client-node's
 * PortForward (one WebSocket stream through the API server per local connection) behind a
 * net.Server on 127.0.0.1. `mur` opens it for one command and closes it on the way out.
 */
import net from 'node:net';
import { Writable } from 'node:stream';
import type { KubeConfig, V1Pod, V1Service } from '@kubernetes/client-node';
import { MurError } from '../errors.ts';
import { apiMessage, clientNode } from './kubeconfig.ts';

export interface Forward {
  /** `http://127.0.0.1:<port>/` */
  url: string;
  pod: string;
  /** Why the forward last failed to connect (the API server's or the kubelet's words), if it did. */
  lastError(): string | undefined;
  close(): Promise<void>;
}

/** client-node rejects with the WebSocket's ErrorEvent (or the upgrade's refusal), not an Error. */
function wsFailure(e: unknown): string {
  if (e instanceof Error) return e.message;
  const ev = e as { message?: unknown; error?: { message?: unknown } };
  const m = ev?.error?.message ?? ev?.message;
  return typeof m === 'string' && m !== '' ? m : 'the API server refused the port-forward';
}

/** The Service named by the capsule's URL (`http://<svc>.<ns>.svc…:<port>`) and its ready pod. */
export async function servicePod(kc: KubeConfig, a2aUrl: string, namespace: string): Promise<{ pod: string; port: number }> {
  const k8s = clientNode();
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const u = new URL(a2aUrl);
  const svcName = u.hostname.split('.')[0]!;
  const svcPort = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  let svc: V1Service;
  let pods: V1Pod[];
  try {
    svc = await core.readNamespacedService({ name: svcName, namespace });
    const selector = Object.entries(svc.spec?.selector ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    if (!selector) throw new MurError('E-CLI-038', `Service ${namespace}/${svcName} selects no pods`);
    pods = (await core.listNamespacedPod({ namespace, labelSelector: selector })).items;
  } catch (e) {
    if (e instanceof MurError) throw e;
    const code = (e as { code?: number }).code;
    throw new MurError('E-CLI-038', `cannot find the pods of Service ${namespace}/${svcName}${code ? ` (HTTP ${code})` : ''}: ${apiMessage(e)}`, {
      hint: `your RBAC needs get on services and list on pods in ${namespace} to port-forward`,
      cause: e,
    });
  }
  const ready = pods.find(
    (p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  );
  if (!ready)
    throw new MurError('E-CLI-038', `no ready pod behind Service ${namespace}/${svcName} (${pods.length} pod(s))`, {
      hint: `kubectl get pods -n ${namespace} -l app.kubernetes.io/instance=${svcName}`,
    });
  const sp = svc.spec?.ports?.find((p) => p.port === svcPort) ?? svc.spec?.ports?.[0];
  const target = sp?.targetPort ?? sp?.port;
  let port = typeof target === 'number' ? target : Number.NaN;
  if (typeof target === 'string') {
    // A named targetPort is the container port of that name.
    for (const c of ready.spec?.containers ?? []) for (const p of c.ports ?? []) if (p.name === target) port = p.containerPort;
  }
  if (!Number.isInteger(port))
    throw new MurError(
      'E-CLI-038',
      `Service ${namespace}/${svcName} port ${svcPort} targets '${String(target)}', which pod ${ready.metadata?.name} does not name`,
    );
  return { pod: ready.metadata!.name!, port };
}

export async function openForward(kc: KubeConfig, namespace: string, pod: string, port: number): Promise<Forward> {
  const k8s = clientNode();
  const pf = new k8s.PortForward(kc);
  const sockets = new Set<net.Socket>();
  let lastError: string | undefined;
  // A failed forward is seen by the client as a closed connection; the reason is kept for its error.
  const fail = (socket: net.Socket, why: string): void => {
    lastError = why;
    socket.destroy();
  };
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => {}); // a reset by the client or the forward: the close handles it
    // The error stream carries the kubelet's refusal ("error forwarding port …").
    const errors = new Writable({
      write(chunk: Buffer, _enc, done) {
        // client-node strips each stream's first frame (the 2-byte port number) and writes what is
        // left, often nothing: only text on the error stream is a refusal.
        const why = chunk.toString('utf8').trim();
        if (why !== '') fail(socket, why);
        done();
      },
    });
    pf.portForward(namespace, pod, [port], socket, errors, socket).then(
      (ws) => {
        const w = ws as unknown as { on(ev: 'close', f: () => void): void; close(): void };
        w.on('close', () => socket.end());
        socket.once('close', () => w.close());
      },
      (e: unknown) => fail(socket, wsFailure(e)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const local = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${local}/`,
    pod,
    lastError: () => lastError,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
