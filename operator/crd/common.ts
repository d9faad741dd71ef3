/** Schema pieces shared by the Capsule and Hook CRDs. */
import { arr, bool, int, obj, str, type Schema } from './schema.ts';

export const SHA256 = '^[0-9a-f]{64}$';

export const artifactSource = (): Schema =>
  obj(
    'Where the runtime fetches the artifact (.mur.zip) from, instead of its registry. The bytes are verified against sha256 before anything is staged.',
    {
      url: str('https:// or oci:// location of the artifact.', { pattern: '^(https|oci)://[^\\s]+$', maxLength: 2048 }),
      sha256: str('Lowercase hex sha256 of the artifact bytes.', { pattern: SHA256 }),
    },
    { required: ['url', 'sha256'] },
  );

export const capabilities = (what: string): Schema =>
  obj(`${what} Same block as capabilities in murmur.yaml.`, {
    network: obj('Outgoing network grant.', {
      allow: arr(
        'Destinations the capsule may reach: host, host:port, scheme://host[:port], an IP or CIDR (optionally :port), or capsule://<namespace>/<name> for another Capsule. Hostnames are enforced by the runtime; IPs, CIDRs, ports and capsules also become NetworkPolicy egress rules.',
        str('One destination.', { minLength: 1, maxLength: 512 }),
        {
          maxItems: 128,
          'x-kubernetes-list-type': 'set',
          'x-kubernetes-validations': [
            {
              rule: "self.all(e, !e.startsWith('capsule://') || e.matches('^capsule://[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))",
              message: 'a capsule peer is written capsule://<namespace>/<name>',
            },
          ],
        },
      ),
      unix_sockets: bool('Allow AF_UNIX sockets for shell subprocesses.'),
    }),
    filesystem: obj('Filesystem grant inside the workdir.', {
      scope: str('Relative directory inside the workdir the capsule may use (no ..).', {
        maxLength: 256,
        'x-kubernetes-validations': [{ rule: "!self.startsWith('/') && !self.contains('..')", message: 'filesystem.scope is relative to the workdir and may not contain ..' }],
      }),
      workdir_exec: bool('Allow executing files written to the workdir.'),
    }),
    shell: obj('Shell tool grant.', {
      allow: arr('Bare binary names the shell tool may run; each becomes a tool named after it.', str('Binary name.', { pattern: '^[A-Za-z0-9._+-]+$', maxLength: 128 }), {
        maxItems: 128,
        'x-kubernetes-list-type': 'set',
      }),
    }),
    env: obj('Environment grant.', {
      allow: arr('Host environment variable names a WASM guest may see (credential-shaped names are still stripped).', str('Variable name.', { pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 128 }), {
        maxItems: 128,
        'x-kubernetes-list-type': 'set',
      }),
    }),
    limits: obj('Per-component WASM limits.', {
      memory_bytes: int('Linear memory ceiling per instance (default 512 MiB).', { minimum: 1 }),
      table_elements: int('Table element ceiling (default 100000).', { minimum: 1 }),
      instances: int('Instance ceiling (default 1000).', { minimum: 1 }),
      deadline_seconds: int('Wall-clock deadline per call (default 600, hooks 30).', { minimum: 1 }),
    }),
  });
