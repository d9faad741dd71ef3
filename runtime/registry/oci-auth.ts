/**
 * Registry credentials for `mur pull` / `mur run` / `mur publish --oci`, from two documented places:
 *
 *  1. `MURMUR_OCI_USERNAME` + `MURMUR_OCI_PASSWORD` (every registry);
 *  2. Docker's `config.json` (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`), the file
 *     `docker login`, `oras login` and `podman login --authfile` write: `auths["<host[:port]>"]`
 *     with `auth` (base64 `user:password`) or `username` + `password` (an `identitytoken`, the OAuth2
 *     refresh-token flow, is not used). Credential helpers (`credsStore`, `credHelpers`) are not
 *     run: when the registry then asks for credentials, the error says so and what to write instead.
 *
 * Credentials are never logged: messages name where they came from, never their value.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MurError } from '../errors.ts';
import { holdSecret } from '../secrets.ts';

export interface Credentials {
  username: string;
  password: string;
  /** Where they came from, for messages (never the values). */
  from: string;
}

export function dockerConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(env.DOCKER_CONFIG ?? path.join(os.homedir(), '.docker'), 'config.json');
}

interface DockerAuth {
  auth?: string;
  username?: string;
  password?: string;
}

/** The `auths` key forms Docker writes for a host: bare, with a scheme, with a `/v1/`/`/v2/` path. */
function matches(key: string, registry: string): boolean {
  const host = key.replace(/^https?:\/\//, '').replace(/\/.*$/, '');
  return host === registry;
}

export function credentialsFor(registry: string, env: NodeJS.ProcessEnv = process.env): Credentials | undefined {
  const c = readCredentials(registry, env);
  // Held for redaction (secrets.ts), the password and the Basic header value made of it: a registry
  // quoting either in an error body reaches no output.
  if (c) {
    holdSecret(c.password);
    holdSecret(Buffer.from(`${c.username}:${c.password}`).toString('base64'));
  }
  return c;
}

function readCredentials(registry: string, env: NodeJS.ProcessEnv): Credentials | undefined {
  if (env.MURMUR_OCI_USERNAME !== undefined && env.MURMUR_OCI_PASSWORD !== undefined) {
    return { username: env.MURMUR_OCI_USERNAME, password: env.MURMUR_OCI_PASSWORD, from: 'MURMUR_OCI_USERNAME/MURMUR_OCI_PASSWORD' };
  }
  const file = dockerConfigPath(env);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined; // no config.json: anonymous
  }
  let cfg: { auths?: Record<string, DockerAuth>; credsStore?: string; credHelpers?: Record<string, string> };
  try {
    cfg = JSON.parse(text) as typeof cfg;
  } catch (e) {
    throw new MurError('E-REG-018', `${file} is not valid JSON (${(e as Error).message})`, {
      hint: 'fix the file (docker login / oras login write it), or set MURMUR_OCI_USERNAME and MURMUR_OCI_PASSWORD',
      location: { file },
    });
  }
  const entry = Object.entries(cfg.auths ?? {}).find(([k]) => matches(k, registry))?.[1];
  const from = `${file} auths["${registry}"]`;
  if (entry?.auth) {
    const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0)
      throw new MurError('E-REG-018', `${from}.auth is not base64 of 'user:password'`, {
        hint: `log in again (docker login ${registry}), or set MURMUR_OCI_USERNAME and MURMUR_OCI_PASSWORD`,
        location: { file },
      });
    return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1), from };
  }
  if (entry?.username !== undefined && entry.password !== undefined) return { username: entry.username, password: entry.password, from };
  return undefined;
}

/**
 * When the registry's credentials sit in a Docker credential helper mur does not run: what to say
 * if the registry then asks for credentials (anonymous pulls still work, so it is not an error).
 */
export function helperNote(registry: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const file = dockerConfigPath(env);
  try {
    const cfg = JSON.parse(readFileSync(file, 'utf8')) as { credsStore?: string; credHelpers?: Record<string, string> };
    const helper = cfg.credHelpers?.[registry] ?? cfg.credsStore;
    return helper ? `${file} keeps the credentials for ${registry} in the credential helper 'docker-credential-${helper}', which mur does not run` : undefined;
  } catch {
    return undefined;
  }
}
