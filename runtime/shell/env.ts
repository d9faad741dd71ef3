/**
 * The environment a shell command runs with: the host environment it is handed, minus every
 * credential-shaped variable, with HOME inside the workdir.
 *
 * Stripped names (globs, `*` = any run of characters, matched case-insensitively), the list
 * docs/shell.md documents:
 *
 *   *_KEY  *_KEYS  *APIKEY*  *API_KEY*  *PRIVATE_KEY*  *ACCESS_KEY*
 *   *TOKEN*  *SECRET*  *PASSWORD*  *PASSWD*  *_PWD  *PASSPHRASE*  *CREDENTIAL*  *_AUTH  *AUTH_*
 *   *COOKIE*  *SESSION_ID*  *_DSN  DATABASE_URL  *CONNECTION_STRING*
 *   AWS_*  AZURE_*  GOOGLE_*  GCP_*  GCLOUD_*  CLOUDSDK_*  DOCKER_*  KUBECONFIG  VAULT_*
 *   SSH_AUTH_SOCK  SSH_AGENT_PID  GPG_AGENT_INFO  GIT_ASKPASS  SSH_ASKPASS  NETRC
 *   NPM_CONFIG_*  NODE_AUTH_*  PIP_INDEX_URL  PIP_EXTRA_INDEX_URL  UV_INDEX_URL  CARGO_REGISTRIES_*
 *
 * plus the manifest's own strip globs. HOME and USERPROFILE are set to the workdir (or a directory
 * the caller names inside it), and PWD to the working directory.
 */
export const CREDENTIAL_ENV_GLOBS: readonly string[] = [
  '*_KEY',
  '*_KEYS',
  '*APIKEY*',
  '*API_KEY*',
  '*PRIVATE_KEY*',
  '*ACCESS_KEY*',
  '*TOKEN*',
  '*SECRET*',
  '*PASSWORD*',
  '*PASSWD*',
  '*_PWD',
  '*PASSPHRASE*',
  '*CREDENTIAL*',
  '*_AUTH',
  '*AUTH_*',
  '*COOKIE*',
  '*SESSION_ID*',
  '*_DSN',
  'DATABASE_URL',
  '*CONNECTION_STRING*',
  'AWS_*',
  'AZURE_*',
  'GOOGLE_*',
  'GCP_*',
  'GCLOUD_*',
  'CLOUDSDK_*',
  'DOCKER_*',
  'KUBECONFIG',
  'VAULT_*',
  'SSH_AUTH_SOCK',
  'SSH_AGENT_PID',
  'GPG_AGENT_INFO',
  'GIT_ASKPASS',
  'SSH_ASKPASS',
  'NETRC',
  'NPM_CONFIG_*',
  'NODE_AUTH_*',
  'PIP_INDEX_URL',
  'PIP_EXTRA_INDEX_URL',
  'UV_INDEX_URL',
  'CARGO_REGISTRIES_*',
];

const cache = new Map<string, RegExp>();
/** A glob (`*` any run, `?` one character) as an anchored, case-insensitive RegExp. */
export function globToRegExp(glob: string): RegExp {
  let re = cache.get(glob);
  if (re === undefined) {
    const body = glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.');
    re = new RegExp(`^${body}$`, 'i');
    cache.set(glob, re);
  }
  return re;
}

/** Whether `name` is stripped by the built-in credential list or one of `extraGlobs`. */
export function isStrippedEnvName(name: string, extraGlobs: readonly string[] = []): boolean {
  for (const g of CREDENTIAL_ENV_GLOBS) if (globToRegExp(g).test(name)) return true;
  for (const g of extraGlobs) if (globToRegExp(g).test(name)) return true;
  return false;
}

export interface ShellEnvOptions {
  /** The host environment to start from. */
  env: Readonly<Record<string, string | undefined>>;
  /** Extra strip globs from the manifest. */
  stripEnvGlobs?: readonly string[];
  /** HOME (and USERPROFILE). */
  home: string;
  /** PWD. */
  cwd: string;
}

export function shellEnv(opts: ShellEnvOptions): { env: Record<string, string>; stripped: string[] } {
  const env: Record<string, string> = {};
  const stripped: string[] = [];
  for (const [k, v] of Object.entries(opts.env)) {
    if (v === undefined) continue;
    if (isStrippedEnvName(k, opts.stripEnvGlobs)) {
      stripped.push(k);
      continue;
    }
    env[k] = v;
  }
  env.HOME = opts.home;
  env.USERPROFILE = opts.home;
  env.PWD = opts.cwd;
  return { env, stripped: stripped.sort() };
}
