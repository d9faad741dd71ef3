/**
 * WebAssembly components as OCI artifacts, in the CNCF Wasm OCI artifact layout that `oras`, `wkg`
 * and other Wasm tools push: an image manifest whose config has media type
 * `application/vnd.wasm.config.v0+json` and whose one layer is `application/wasm` (the component).
 *
 * The client speaks the OCI distribution spec directly: GET/HEAD manifests and blobs, the
 * monolithic blob upload (POST + PUT ?digest=) and manifest PUT, and token auth (a 401 with
 * `WWW-Authenticate: Bearer realm=…,service=…,scope=…` is answered by fetching a token from the
 * realm, with basic credentials when given; a `Basic` challenge gets basic credentials). No
 * well-kept Node library speaks the distribution protocol (the registry clients on npm are
 * unmaintained or Docker-image-specific), so this is kept small and to the spec.
 *
 * Every byte is verified: a manifest must hash to the digest pinned in the reference, the layer to
 * the digest the manifest names. Plain http is used only for loopback registries (and hosts listed
 * in MURMUR_OCI_INSECURE), and only when they do not speak TLS (https is tried first, as Docker
 * does); a private CA is trusted through MURMUR_OCI_CA_FILE (oci-http.ts); credentials come from
 * MURMUR_OCI_USERNAME / MURMUR_OCI_PASSWORD or Docker's config.json (oci-auth.ts). A 401 is
 * E-REG-018, a 403 E-REG-019, an unverifiable certificate E-REG-020. In a
 * cluster the operator mounts OCI artifacts as image volumes instead, so the runtime there needs no
 * registry credentials at all.
 */
import { createHash } from 'node:crypto';
import { MurError } from '../errors.ts';
import { credentialsFor, dockerConfigPath, helperNote, type Credentials } from './oci-auth.ts';
import { httpRequest, isCertError, isNotTls } from './oci-http.ts';
import { formatOciRef, type OciRef } from './oci-ref.ts';

export { formatOciRef, parseOciRef, type OciRef } from './oci-ref.ts';

export const WASM_CONFIG_MEDIA_TYPE = 'application/vnd.wasm.config.v0+json';
export const WASM_LAYER_MEDIA_TYPE = 'application/wasm';
export const OCI_MANIFEST_MEDIA_TYPE = 'application/vnd.oci.image.manifest.v1+json';
const MAX_BYTES = 256 * 1024 * 1024;

function isLoopback(host: string): boolean {
  const h = host.replace(/:[0-9]+$/, '').replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\./.test(h);
}

/** Loopback registries and MURMUR_OCI_INSECURE hosts may speak plain http (tried after https, as Docker does). */
function mayBePlain(registry: string): boolean {
  const insecure = (process.env.MURMUR_OCI_INSECURE ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return isLoopback(registry) || insecure.includes(registry);
}

function ociError(
  ref: OciRef,
  what: string,
  hint = 'check the reference, the registry and its credentials (MURMUR_OCI_USERNAME / MURMUR_OCI_PASSWORD, or docker login)',
): MurError {
  return new MurError('E-REG-016', `OCI artifact ${ref.raw}: ${what}`, { hint });
}

function causeOf(e: unknown): unknown {
  return (e as Error)?.cause ?? e;
}

export function sha256Digest(b: Uint8Array): string {
  return `sha256:${createHash('sha256').update(b).digest('hex')}`;
}

/** Parses the parameters of a `WWW-Authenticate` challenge (`realm`, `service`, `scope`, `error`). */
function challengeParams(challenge: string): Record<string, string> {
  return Object.fromEntries([...challenge.matchAll(/([a-z_]+)="([^"]*)"/gi)].map((m) => [m[1]!.toLowerCase(), m[2]!]));
}

/** A session with one registry: remembers the scheme and the bearer token per scope. */
export class OciClient {
  private tokens = new Map<string, string>();
  private base: Promise<string> | undefined;
  private creds: Credentials | undefined | null = null;
  constructor(readonly ref: OciRef) {}

  private credentials(): Credentials | undefined {
    if (this.creds === null) this.creds = credentialsFor(this.ref.registry);
    return this.creds;
  }

  private basic(): string | undefined {
    const c = this.credentials();
    return c ? `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}` : undefined;
  }

  /** `https://<registry>`, or `http://` for a loopback/insecure registry that does not speak TLS. */
  baseUrl(): Promise<string> {
    this.base ??= (async () => {
      const https = `https://${this.ref.registry}`;
      if (!mayBePlain(this.ref.registry)) return https;
      try {
        await httpRequest(`${https}/v2/`, { method: 'GET', timeoutMs: 30_000 });
        return https;
      } catch (e) {
        if (isNotTls(causeOf(e))) return `http://${this.ref.registry}`;
        throw this.transportError(`${https}/v2/`, e);
      }
    })();
    return this.base;
  }

  /** A transport failure: a certificate the client cannot verify gets its own code (E-REG-020). */
  private transportError(url: string, e: unknown): MurError {
    const c = causeOf(e);
    if (isCertError(c)) {
      return new MurError(
        'E-REG-020',
        `OCI artifact ${this.ref.raw}: the TLS certificate of ${new URL(url).host} cannot be verified (${c.code}: ${c.message})`,
        {
          hint: 'if the registry uses a private CA, point MURMUR_OCI_CA_FILE at its PEM certificate (or start mur with NODE_EXTRA_CA_CERTS=<pem>); check the certificate names the host you pull from',
        },
      );
    }
    return ociError(this.ref, `cannot reach ${url}: ${(c as Error)?.message ?? String(c)}`);
  }

  /** 401/403 from the registry or its token service, as E-REG-018/E-REG-019 (no credential in the text). */
  private authError(status: number, where: string, detail: string, push: boolean, denied = status === 403): MurError {
    const c = this.credentials();
    const access = `${push ? 'push to' : 'pull from'} ${this.ref.registry}/${this.ref.repository}`;
    if (denied) {
      return new MurError(
        'E-REG-019',
        `OCI artifact ${this.ref.raw}: ${where} denied access (HTTP ${status}) to ${access}${c ? ` for the credentials from ${c.from}` : ' without credentials'}${detail}`,
        {
          hint: `the credentials are valid but lack ${push ? 'push' : 'pull'} permission on ${this.ref.repository}: grant it in the registry, or use credentials that have it`,
        },
      );
    }
    const note = c ? undefined : helperNote(this.ref.registry);
    return new MurError(
      'E-REG-018',
      `OCI artifact ${this.ref.raw}: ${where} refused ${c ? `the credentials from ${c.from}` : 'an anonymous request'} (HTTP 401) to ${access}${detail}${note ? `; ${note}` : ''}`,
      {
        hint: c
          ? `check the user name and password in ${c.from} (docker login ${this.ref.registry} / oras login ${this.ref.registry} rewrite them)`
          : `give credentials: MURMUR_OCI_USERNAME and MURMUR_OCI_PASSWORD, or auths["${this.ref.registry}"] in ${dockerConfigPath()} (docker login ${this.ref.registry} writes it)`,
      },
    );
  }

  /** Answers a 401 challenge (distribution spec token auth); returns the Authorization value. */
  private async authorize(challenge: string, scope: string, push: boolean): Promise<string | undefined> {
    const basic = this.basic();
    if (/^basic/i.test(challenge)) return basic;
    if (!/^bearer/i.test(challenge)) return undefined;
    const params = challengeParams(challenge);
    if (!params.realm) return undefined;
    const url = new URL(params.realm);
    if (params.service) url.searchParams.set('service', params.service);
    url.searchParams.set('scope', params.scope ?? scope);
    let res: Response;
    try {
      res = await httpRequest(url.toString(), { headers: basic ? { authorization: basic } : {}, timeoutMs: 30_000 });
    } catch (e) {
      throw this.transportError(url.toString(), e);
    }
    const where = `the token service ${url.origin}${url.pathname}`;
    if (res.status === 401 || res.status === 403) throw this.authError(res.status, where, '', push);
    if (!res.ok) throw ociError(this.ref, `${where} answered HTTP ${res.status}`);
    let body: { token?: string; access_token?: string };
    try {
      body = (await res.json()) as typeof body;
    } catch {
      throw ociError(this.ref, `${where} answered something that is not JSON`);
    }
    const token = body.token ?? body.access_token;
    return token ? `Bearer ${token}` : undefined;
  }

  /** One request, retried once after answering an auth challenge; 401/403 after that are errors. */
  async request(method: string, path: string, init: { headers?: Record<string, string>; body?: Uint8Array; push?: boolean } = {}): Promise<Response> {
    const push = init.push ?? false;
    const scope = `repository:${this.ref.repository}:${push ? 'pull,push' : 'pull'}`;
    const url = path.startsWith('http') ? path : `${await this.baseUrl()}${path}`;
    const send = (auth?: string) =>
      httpRequest(url, { method, headers: { ...(init.headers ?? {}), ...(auth ? { authorization: auth } : {}) }, ...(init.body ? { body: init.body } : {}) });
    let res: Response;
    try {
      res = await send(this.tokens.get(scope));
      if (res.status === 401) {
        const auth = await this.authorize(res.headers.get('www-authenticate') ?? '', scope, push);
        if (auth) {
          this.tokens.set(scope, auth);
          res = await send(auth);
        }
      }
    } catch (e) {
      if (e instanceof MurError) throw e;
      throw this.transportError(url, e);
    }
    if (res.status === 401 || res.status === 403) {
      const err = challengeParams(res.headers.get('www-authenticate') ?? '').error;
      // A token without the access asked for: the credentials were accepted, the action is not allowed.
      throw this.authError(
        res.status,
        'the registry',
        err ? ` (${err})` : '',
        push,
        res.status === 403 || (err === 'insufficient_scope' && this.credentials() !== undefined),
      );
    }
    return res;
  }

  private async bytes(res: Response, what: string): Promise<Uint8Array> {
    if (!res.ok) throw ociError(this.ref, `${what}: HTTP ${res.status} ${(await res.text().catch(() => '')).slice(0, 200)}`);
    const b = new Uint8Array(await res.arrayBuffer());
    if (b.byteLength > MAX_BYTES) throw ociError(this.ref, `${what} is larger than ${MAX_BYTES} bytes`);
    return b;
  }

  /** The manifest by digest (verified against it) or by tag; returns its bytes and digest. */
  async manifest(): Promise<{ bytes: Uint8Array; digest: string; manifest: OciManifest }> {
    const reference = this.ref.digest ?? this.ref.tag ?? 'latest';
    const res = await this.request('GET', `/v2/${this.ref.repository}/manifests/${reference}`, {
      headers: { accept: `${OCI_MANIFEST_MEDIA_TYPE}, application/vnd.docker.distribution.manifest.v2+json` },
    });
    const bytes = await this.bytes(res, `manifest ${reference}`);
    const digest = sha256Digest(bytes);
    if (this.ref.digest && digest !== this.ref.digest) {
      throw new MurError('E-REG-008', `OCI artifact ${this.ref.raw}: the manifest served hashes to ${digest}, not the pinned ${this.ref.digest}`, {
        hint: 'the registry served other bytes than the pin; check the reference (never trust a tag over the digest)',
      });
    }
    let manifest: OciManifest;
    try {
      manifest = JSON.parse(Buffer.from(bytes).toString('utf8')) as OciManifest;
    } catch {
      throw ociError(this.ref, 'the manifest is not JSON');
    }
    return { bytes, digest, manifest };
  }

  /** A blob, verified against its digest. */
  async blob(digest: string): Promise<Uint8Array> {
    const b = await this.bytes(await this.request('GET', `/v2/${this.ref.repository}/blobs/${digest}`), `blob ${digest}`);
    const got = sha256Digest(b);
    if (got !== digest)
      throw new MurError('E-REG-008', `OCI artifact ${this.ref.raw}: blob ${digest} hashes to ${got}`, {
        hint: 'the registry served corrupt or substituted bytes',
      });
    return b;
  }

  /** Monolithic upload (POST then PUT ?digest=), skipped when the blob exists. */
  async pushBlob(bytes: Uint8Array): Promise<string> {
    const digest = sha256Digest(bytes);
    const head = await this.request('HEAD', `/v2/${this.ref.repository}/blobs/${digest}`, { push: true });
    if (head.ok) return digest;
    const start = await this.request('POST', `/v2/${this.ref.repository}/blobs/uploads/`, { push: true });
    if (start.status !== 202) throw ociError(this.ref, `blob upload refused: HTTP ${start.status}`);
    const loc = start.headers.get('location');
    if (!loc) throw ociError(this.ref, 'blob upload: no Location');
    const url = new URL(loc, `${await this.baseUrl()}/`);
    url.searchParams.set('digest', digest);
    const put = await this.request('PUT', url.toString(), { push: true, body: bytes, headers: { 'content-type': 'application/octet-stream' } });
    if (put.status !== 201) throw ociError(this.ref, `blob upload failed: HTTP ${put.status}`);
    return digest;
  }

  async pushManifest(bytes: Uint8Array, reference: string): Promise<void> {
    const res = await this.request('PUT', `/v2/${this.ref.repository}/manifests/${reference}`, {
      push: true,
      body: bytes,
      headers: { 'content-type': OCI_MANIFEST_MEDIA_TYPE },
    });
    if (res.status !== 201) throw ociError(this.ref, `manifest push failed: HTTP ${res.status} ${(await res.text()).slice(0, 200)}`);
  }
}

export interface OciDescriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

export interface OciManifest {
  schemaVersion: number;
  mediaType?: string;
  artifactType?: string;
  config: OciDescriptor;
  layers: OciDescriptor[];
  annotations?: Record<string, string>;
}

/** Pulls the component of a Wasm OCI artifact, every byte verified; returns it with the manifest digest. */
export async function pullWasm(ref: OciRef): Promise<{ component: Uint8Array; manifestDigest: string; layerDigest: string; manifest: OciManifest }> {
  const c = new OciClient(ref);
  const { digest, manifest } = await c.manifest();
  if (manifest.config?.mediaType !== WASM_CONFIG_MEDIA_TYPE) {
    throw ociError(
      ref,
      `config media type is ${JSON.stringify(manifest.config?.mediaType)}, not ${WASM_CONFIG_MEDIA_TYPE} (the CNCF Wasm OCI artifact layout)`,
      `push the component as a Wasm artifact: oras push ${formatOciRef({ ...ref, digest: undefined } as OciRef)} --config config.json:${WASM_CONFIG_MEDIA_TYPE} component.wasm:${WASM_LAYER_MEDIA_TYPE} (or wkg oci push)`,
    );
  }
  const layers = (manifest.layers ?? []).filter((l) => l.mediaType === WASM_LAYER_MEDIA_TYPE);
  if (layers.length !== 1) throw ociError(ref, `needs exactly one ${WASM_LAYER_MEDIA_TYPE} layer, has ${layers.length}`);
  const layer = layers[0]!;
  const component = await c.blob(layer.digest);
  return { component, manifestDigest: digest, layerDigest: layer.digest, manifest };
}

/** Pushes a component as a Wasm OCI artifact under `ref.tag`; returns the manifest digest. */
export async function pushWasm(ref: OciRef, component: Uint8Array, annotations: Record<string, string> = {}, fileName = 'component.wasm'): Promise<string> {
  const c = new OciClient(ref);
  const config = Buffer.from(JSON.stringify({ architecture: 'wasm', os: 'wasip2', layerDigests: [sha256Digest(component)] }));
  const configDigest = await c.pushBlob(config);
  const layerDigest = await c.pushBlob(component);
  const manifest: OciManifest = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST_MEDIA_TYPE,
    artifactType: WASM_CONFIG_MEDIA_TYPE,
    config: { mediaType: WASM_CONFIG_MEDIA_TYPE, digest: configDigest, size: config.length },
    // The title names the file `oras pull` writes.
    layers: [{ mediaType: WASM_LAYER_MEDIA_TYPE, digest: layerDigest, size: component.length, annotations: { 'org.opencontainers.image.title': fileName } }],
    ...(Object.keys(annotations).length ? { annotations } : {}),
  };
  const bytes = Buffer.from(JSON.stringify(manifest));
  await c.pushManifest(bytes, ref.tag ?? sha256Digest(bytes));
  return sha256Digest(bytes);
}
