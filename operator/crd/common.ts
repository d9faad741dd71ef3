/** Schema pieces shared by the Capsule and Hook CRDs. */
import { allowEntryRules, stripEnvRule } from './admission.ts';
import { arr, int, obj, quantity, str, type Schema } from './schema.ts';

export const SHA256 = '^[0-9a-f]{64}$';
export const OCI_PINNED = '^[a-zA-Z0-9.:\\[\\]-]+/[a-z0-9._/-]+(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?@sha256:[0-9a-f]{64}$';

export const artifactSource = (): Schema =>
  obj(
    "Where the runtime fetches the artifact from, instead of its registry: a URL with its sha256, or a digest-pinned Wasm OCI artifact (mounted into the pod as an image volume, pulled by the kubelet with the cluster's pull secrets). The bytes are verified before anything is staged.",
    {
      url: str('http(s) URL of a .wasm component or a .tar/.tar.gz artifact bundle.', { pattern: '^https?://[^\\s]+$', maxLength: 2048 }),
      sha256: str('Lowercase hex sha256 of the artifact bytes.', { pattern: SHA256 }),
      oci: str('A Wasm OCI artifact, <registry>/<repo>[:<tag>]@sha256:<64 hex> (config application/vnd.wasm.config.v0+json, one application/wasm layer).', {
        pattern: OCI_PINNED,
        maxLength: 1024,
      }),
    },
    {
      'x-kubernetes-validations': [
        {
          rule: 'has(self.oci) ? !has(self.url) && !has(self.sha256) : has(self.url) && has(self.sha256)',
          message: 'a source is either {url, sha256} or {oci: <registry>/<repo>:<tag>@sha256:<hex>}',
        },
      ],
    },
  );

export const ARTIFACT_NAME = '^[a-z0-9]([a-z0-9-]{0,98}[a-z0-9])?$';

/**
 * A capabilities block (capsule-wide, per artifact, per hook grant): every allow entry and
 * strip_env glob is checked at admission with the runtime's grammar (admission.ts). The list
 * bounds keep the rules' estimated cost inside the API server's budget.
 */
export const capabilities = (what: string, maxAllow = 128, maxEntryLength = 300): Schema =>
  obj(`${what} Same block as capabilities in murmur.yaml.`, {
    network: obj('Outgoing network grant.', {
      allow: arr(
        'Destinations the capsule may reach: host, host:port, http(s)://host[:port], or capsule://<namespace>/<name> for another Capsule; IPs and CIDRs (optionally :port) for the network layer. Hostnames are enforced by the runtime; IPs, ports and capsules also become NetworkPolicy egress rules; CIDRs only become NetworkPolicy rules.',
        str('One destination.', { minLength: 1, maxLength: maxEntryLength, 'x-kubernetes-validations': allowEntryRules() }),
        { maxItems: maxAllow, 'x-kubernetes-list-type': 'set' },
      ),
    }),
    filesystem: obj('Filesystem grant inside the workdir.', {
      scope: str('Relative directory inside the workdir the capsule may use (no ..; default the whole workdir).', {
        maxLength: 256,
        'x-kubernetes-validations': [
          { rule: "!self.startsWith('/') && !self.contains('..')", message: 'filesystem.scope is relative to the workdir and may not contain ..' },
        ],
      }),
    }),
    shell: obj(
      'Shell tool grant (absent: no shell tool).',
      {
        allow: arr(
          'Bare binary names the shell tool may run; each becomes a tool named after it.',
          str('Binary name.', { pattern: '^[A-Za-z0-9._+-]+$', maxLength: 128 }),
          {
            minItems: 1,
            maxItems: 128,
            'x-kubernetes-list-type': 'set',
          },
        ),
        strip_env: arr(
          'Extra env var globs removed from shell subprocesses (credential-shaped names always are).',
          str('Glob, e.g. AWS_*.', { maxLength: 128, 'x-kubernetes-validations': [stripEnvRule()] }),
          { maxItems: 64 },
        ),
      },
      { required: ['allow'] },
    ),
    env: obj('Environment grant.', {
      allow: arr(
        'Host environment variable names a WASM guest may see (credential-shaped names are still stripped).',
        str('Variable name.', { pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 128 }),
        {
          maxItems: 128,
          'x-kubernetes-list-type': 'set',
        },
      ),
    }),
    limits: obj('Per-component WASM limits.', {
      memory_bytes: { ...quantity('Linear memory ceiling per instance: bytes, or a string like 512Mi (default 512 MiB).') },
      deadline_seconds: int('Wall-clock deadline of one tool or driver call (default 600).', { minimum: 1 }),
      hook_deadline_seconds: int('Wall-clock deadline of one hook handler call (default 30).', { minimum: 1 }),
    }),
  });
