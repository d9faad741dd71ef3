/**
 * A thin API client. Auth: in a pod, the mounted ServiceAccount token and CA (read here, see below);
 * elsewhere @kubernetes/client-node's KubeConfig (kubeconfig files, exec plugins, TLS material).
 * Requests and watches go through two keep-alive agents (see `KubeClient.makeAgents`);
 * every verb the operator needs is here, with the content types the API server requires:
 * server-side apply is `application/apply-patch+yaml` with a field manager and `force=true`,
 * status is a merge patch on the `/status` subresource (real-apiserver.md §5).
 */
import { existsSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { createRequire } from 'node:module';
import type { KubeConfig } from '@kubernetes/client-node';
import { SERVICE_ACCOUNT_DIR, ServiceAccountCredentials } from '../../runtime/contracts/in-cluster.ts';
import type { KubeObject } from '../api/types.ts';
import { clusterSource } from './cluster-source.ts';

/**
 * client-node is loaded only when a kubeconfig is used (development, tests, out-of-cluster): its
 * config loader pulls in the whole generated API (~80 MiB RSS). In a pod the operator reads the
 * mounted ServiceAccount token and CA itself (below), the few lines client-go's rest.InClusterConfig
 * is, so the pod never loads it.
 */
const loadClientNode = () => createRequire(import.meta.url)('@kubernetes/client-node') as typeof import('@kubernetes/client-node');

interface Auth {
  server: URL;
  apply(opts: https.RequestOptions): Promise<void>;
}

/** In-cluster: the API server from KUBERNETES_SERVICE_HOST/PORT, the token re-read when the kubelet rotates it. */
class ServiceAccountAuth implements Auth {
  readonly server: URL;
  private readonly credentials: ServiceAccountCredentials;
  constructor(dir: string, host: string, port: string) {
    this.credentials = new ServiceAccountCredentials(dir, host, port);
    this.server = this.credentials.server;
  }
  async apply(opts: https.RequestOptions): Promise<void> {
    opts.ca = this.credentials.ca;
    opts.headers = { ...(opts.headers as Record<string, string>), Authorization: `Bearer ${this.credentials.bearer()}` };
  }
}

class KubeConfigAuth implements Auth {
  readonly server: URL;
  constructor(readonly kc: KubeConfig) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('no current cluster in the kubeconfig');
    this.server = new URL(cluster.server);
  }
  apply(opts: https.RequestOptions): Promise<void> {
    return this.kc.applyToHTTPSOptions(opts);
  }
}

/** The source clusterSource() picks (kubeconfig files first, then the in-cluster ServiceAccount). */
function defaultAuth(): Auth {
  const source = clusterSource(process.env, existsSync);
  if (source.kind === 'in-cluster') {
    return new ServiceAccountAuth(
      process.env.CAPSULE_OPERATOR_SERVICE_ACCOUNT_DIR || SERVICE_ACCOUNT_DIR,
      source.host,
      process.env.KUBERNETES_SERVICE_PORT || '443',
    );
  }
  const { KubeConfig: KC } = loadClientNode();
  const kc = new KC();
  kc.loadFromDefault();
  return new KubeConfigAuth(kc);
}

/** Sockets of the request agent (lists, gets, writes); watches have their own agent. */
const REQUEST_SOCKETS = 64;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly body?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const isNotFound = (e: unknown): boolean => e instanceof ApiError && e.status === 404;
export const isConflict = (e: unknown): boolean => e instanceof ApiError && e.status === 409;

/** kind → [api prefix, plural]; the operator never needs discovery. */
const RESOURCES: Record<string, [string, string]> = {
  'v1/ConfigMap': ['/api/v1', 'configmaps'],
  'v1/Service': ['/api/v1', 'services'],
  'v1/ServiceAccount': ['/api/v1', 'serviceaccounts'],
  'v1/Secret': ['/api/v1', 'secrets'],
  'v1/Event': ['/api/v1', 'events'],
  'v1/Namespace': ['/api/v1', 'namespaces'],
  'v1/Pod': ['/api/v1', 'pods'],
  'v1/PersistentVolumeClaim': ['/api/v1', 'persistentvolumeclaims'],
  'discovery.k8s.io/v1/EndpointSlice': ['/apis/discovery.k8s.io/v1', 'endpointslices'],
  'apps/v1/Deployment': ['/apis/apps/v1', 'deployments'],
  'apps/v1/ReplicaSet': ['/apis/apps/v1', 'replicasets'],
  'networking.k8s.io/v1/NetworkPolicy': ['/apis/networking.k8s.io/v1', 'networkpolicies'],
  'policy/v1/PodDisruptionBudget': ['/apis/policy/v1', 'poddisruptionbudgets'],
  'coordination.k8s.io/v1/Lease': ['/apis/coordination.k8s.io/v1', 'leases'],
  'murmur.io/v1alpha1/Capsule': ['/apis/murmur.io/v1alpha1', 'capsules'],
  'murmur.io/v1alpha1/Hook': ['/apis/murmur.io/v1alpha1', 'hooks'],
};

/** Collection path of a kind, in a namespace or cluster-wide. */
export function collectionPath(apiVersion: string, kind: string, namespace?: string): string {
  const r = RESOURCES[`${apiVersion}/${kind}`];
  if (!r) throw new Error(`unknown kind ${apiVersion}/${kind}`);
  return namespace ? `${r[0]}/namespaces/${namespace}/${r[1]}` : `${r[0]}/${r[1]}`;
}

export function objectPath(o: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }): string {
  return `${collectionPath(o.apiVersion, o.kind, o.metadata.namespace)}/${encodeURIComponent(o.metadata.name)}`;
}

export interface RequestOptions {
  body?: unknown;
  contentType?: string;
  query?: Record<string, string | number | boolean | undefined>;
  signal?: AbortSignal;
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

export class KubeClient {
  private readonly auth: Auth;
  readonly server: URL;
  private agents: { request: http.Agent; watch: http.Agent } | undefined;
  private pinging: Promise<boolean> | undefined;
  /** Requests by verb, for the writes-in-steady-state figures. */
  readonly counts: Record<string, number> = {};

  /** `impersonate`: act as this user (e.g. `system:serviceaccount:<ns>:<name>`), for RBAC tests. */
  constructor(
    kc?: KubeConfig,
    private readonly opts: { impersonate?: string } = {},
  ) {
    this.auth = kc ? new KubeConfigAuth(kc) : defaultAuth();
    this.server = this.auth.server;
  }

  static fromFile(path: string, opts: { impersonate?: string } = {}): KubeClient {
    const kc = new (loadClientNode().KubeConfig)();
    kc.loadFromFile(path);
    return new KubeClient(kc, opts);
  }

  private async options(method: string, path: string, headers: Record<string, string>, stream: boolean): Promise<https.RequestOptions> {
    const opts: https.RequestOptions = { method, headers: { ...headers } };
    await this.auth.apply(opts);
    this.agents ??= this.makeAgents(opts);
    const base = this.server.pathname.replace(/\/$/, '');
    return {
      ...opts,
      agent: stream ? this.agents.watch : this.agents.request,
      protocol: this.server.protocol,
      hostname: this.server.hostname.replace(/^\[|\]$/g, ''),
      port: this.server.port || (this.server.protocol === 'https:' ? 443 : 80),
      path: base + path,
    };
  }

  /**
   * Two agents, because a watch holds its socket for minutes: on one capped agent, 9 informers per
   * watched namespace took every socket at 8 namespaces and lists, writes and Lease renewals waited
   * forever (issue 38 §3). Watches get an agent of their own without a cap (one socket each, as
   * many as there are informer paths); requests keep a bounded agent no watch ever uses, so a
   * request waits at most for another request.
   */
  private makeAgents(opts: https.RequestOptions): { request: http.Agent; watch: http.Agent } {
    const make = (maxSockets: number): http.Agent => {
      if (this.server.protocol !== 'https:') return new http.Agent({ keepAlive: true, maxSockets });
      return new https.Agent({
        keepAlive: true,
        maxSockets,
        ca: opts.ca,
        cert: opts.cert,
        key: opts.key,
        ...(opts.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
        ...((opts as { servername?: string }).servername ? { servername: (opts as { servername?: string }).servername } : {}),
      });
    };
    return { request: make(REQUEST_SOCKETS), watch: make(Infinity) };
  }

  private static withQuery(path: string, query?: RequestOptions['query']): string {
    if (!query) return path;
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) q.set(k, String(v));
    const s = q.toString();
    return s ? `${path}${path.includes('?') ? '&' : '?'}${s}` : path;
  }

  private raw(method: string, path: string, o: RequestOptions, onResponse: (res: http.IncomingMessage) => void, stream = false): Promise<http.ClientRequest> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (this.opts.impersonate) headers['Impersonate-User'] = this.opts.impersonate;
    let payload: string | undefined;
    if (o.body !== undefined) {
      payload = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
      headers['Content-Type'] = o.contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    return this.options(method, KubeClient.withQuery(path, o.query), headers, stream).then((opts) => {
      const mod = this.server.protocol === 'https:' ? https : http;
      const req = mod.request({ ...opts, signal: o.signal }, onResponse);
      if (payload !== undefined) req.write(payload);
      req.end();
      return req;
    });
  }

  // biome-ignore lint/suspicious/noExplicitAny: an uncast request gives the parsed JSON as is; callers that read it name T
  async request<T = any>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
    this.counts[method] = (this.counts[method] ?? 0) + 1;
    return new Promise<T>((resolve, reject) => {
      this.raw(method, path, o, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          // biome-ignore lint/suspicious/noExplicitAny: the parsed response body, JSON of any shape (or the text when it is not JSON)
          let body: any = text;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            /* not JSON */
          }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve(body as T);
          else reject(new ApiError(status, body?.reason ?? String(status), `${method} ${path}: ${status} ${body?.message ?? text}`, body));
        });
      })
        .then((req) => req.on('error', reject))
        .catch(reject);
    });
  }

  async get<T extends KubeObject>(path: string): Promise<T | undefined> {
    try {
      return await this.request<T>('GET', path);
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  async list<T>(path: string, query: RequestOptions['query'] = {}): Promise<ListResult<T>> {
    const items: T[] = [];
    let cont: string | undefined;
    let rv = '';
    do {
      const page = await this.request<{ items: T[]; metadata: { resourceVersion: string; continue?: string } }>('GET', path, {
        query: { ...query, limit: 500, continue: cont },
      });
      items.push(...(page.items ?? []));
      rv = page.metadata.resourceVersion;
      cont = page.metadata.continue || undefined;
    } while (cont);
    return { items, resourceVersion: rv };
  }

  /**
   * Streams a watch (NDJSON). Resolves when the server closes the stream; rejects on transport
   * errors; `onEvent` sees every event including BOOKMARK and ERROR.
   */
  // biome-ignore lint/suspicious/noExplicitAny: a Kubernetes object as the API server sent it (JSON of any kind)
  watch(path: string, query: RequestOptions['query'], onEvent: (type: string, object: any) => void, signal: AbortSignal): Promise<void> {
    this.counts.WATCH = (this.counts.WATCH ?? 0) + 1;
    return new Promise<void>((resolve, reject) => {
      this.raw(
        'GET',
        path,
        { query: { ...query, watch: 1 }, signal },
        (res) => {
          if ((res.statusCode ?? 0) >= 300) {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              reject(new ApiError(res.statusCode ?? 0, 'WatchFailed', `watch ${path}: ${res.statusCode} ${Buffer.concat(chunks).toString()}`)),
            );
            return;
          }
          let buf = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            buf += chunk;
            let i: number;
            while ((i = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, i).trim();
              buf = buf.slice(i + 1);
              if (!line) continue;
              try {
                const ev = JSON.parse(line) as { type: string; object: unknown };
                onEvent(ev.type, ev.object);
              } catch (e) {
                res.destroy(e as Error);
              }
            }
          });
          res.on('end', () => resolve());
          res.on('error', (e) => (signal.aborted ? resolve() : reject(e)));
          res.on('close', () => resolve());
        },
        true,
      )
        .then((req) => req.on('error', (e) => (signal.aborted ? resolve() : reject(e))))
        .catch(reject);
    });
  }

  /**
   * Whether a request gets through to the API server now: any HTTP answer counts (even 401/403:
   * the connection works), a transport error or no answer within `timeoutMs` does not. It takes
   * the request agent's path, so requests stuck waiting for a socket make it fail too. Concurrent
   * callers share one attempt. Not counted in `counts` (those are the operator's own requests).
   */
  reachable(timeoutMs = 2000): Promise<boolean> {
    this.pinging ??= new Promise<boolean>((resolve) => {
      this.raw('GET', '/version', { signal: AbortSignal.timeout(timeoutMs) }, (res) => {
        res.resume();
        resolve(true);
      })
        .then((req) => req.on('error', () => resolve(false)))
        .catch(() => resolve(false));
    }).finally(() => (this.pinging = undefined));
    return this.pinging;
  }

  /** Server-side apply with our field manager; conflicts are forced (we own these fields). */
  apply<T extends KubeObject>(obj: KubeObject, fieldManager: string, opts: { dryRun?: boolean; subresource?: string } = {}): Promise<T> {
    const path = objectPath(obj) + (opts.subresource ? `/${opts.subresource}` : '');
    return this.request<T>('PATCH', path, {
      body: obj,
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager, force: true, ...(opts.dryRun ? { dryRun: 'All' } : {}) },
    });
  }

  /**
   * Merge patch on `/status`. `resourceVersion` makes it conditional (409 Conflict when the object
   * changed since); `fieldManager` names the writer in managedFields.
   */
  mergePatchStatus<T extends KubeObject>(
    o: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } },
    status: unknown,
    opts: { fieldManager?: string; resourceVersion?: string } = {},
  ): Promise<T> {
    return this.request<T>('PATCH', `${objectPath(o)}/status`, {
      body: { ...(opts.resourceVersion ? { metadata: { resourceVersion: opts.resourceVersion } } : {}), status },
      contentType: 'application/merge-patch+json',
      ...(opts.fieldManager ? { query: { fieldManager: opts.fieldManager } } : {}),
    });
  }

  create<T extends KubeObject>(obj: KubeObject, query?: RequestOptions['query']): Promise<T> {
    return this.request<T>('POST', collectionPath(obj.apiVersion, obj.kind, obj.metadata.namespace), { body: obj, ...(query ? { query } : {}) });
  }

  replace<T extends KubeObject>(obj: KubeObject): Promise<T> {
    return this.request<T>('PUT', objectPath(obj), { body: obj });
  }

  async delete(
    o: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; uid?: string } },
    propagation = 'Background',
  ): Promise<void> {
    try {
      await this.request('DELETE', objectPath(o), {
        body: {
          kind: 'DeleteOptions',
          apiVersion: 'v1',
          propagationPolicy: propagation,
          ...(o.metadata.uid ? { preconditions: { uid: o.metadata.uid } } : {}),
        },
      });
    } catch (e) {
      if (!isNotFound(e) && !isConflict(e)) throw e;
    }
  }

  close(): void {
    this.agents?.request.destroy();
    this.agents?.watch.destroy();
  }
}
