/**
 * Reading `mur serve`'s authentication settings: API keys from a file or a mounted Secret folder,
 * and whether serving without credentials is allowed on the bind address.
 *
 * Key sources (never logged; only holder names are ever printed):
 * - a folder (a Kubernetes Secret volume): each regular file is one key, its name the holder;
 *   kubelet's `..data` bookkeeping entries (names starting with '.') are skipped; a file's key is
 *   read as the operator reads the Secret for the activator (contracts/api-key.ts);
 * - a file: one `holder:key` per line; blank lines and `#` comments are skipped.
 */
import { readdirSync, readFileSync, statSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { apiKeyOf, isApiKeyEntry, MIN_API_KEY_LENGTH } from '../../contracts/api-key.ts';
import { MurError } from '../../errors.ts';
import type { ApiKey } from './auth.ts';

const HOLDER_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export function readApiKeys(path: string): ApiKey[] {
  let st: Stats;
  try {
    st = statSync(path);
  } catch (e) {
    throw new MurError('E-A2A-021', `cannot read A2A API keys from ${path}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`, {
      hint: '--api-keys names a file of `holder:key` lines or a folder with one file per key (a mounted Secret)',
      location: { file: path },
    });
  }
  const keys: ApiKey[] = [];
  if (st.isDirectory()) {
    for (const name of readdirSync(path).sort()) {
      if (!isApiKeyEntry(name)) continue;
      const f = join(path, name);
      if (!statSync(f).isFile()) continue;
      keys.push({ name, key: apiKeyOf(readFileSync(f)) });
    }
  } else {
    readFileSync(path, 'utf8')
      .split('\n')
      .forEach((raw, i) => {
        const line = raw.trim();
        if (line === '' || line.startsWith('#')) return;
        const colon = line.indexOf(':');
        const name = colon > 0 ? line.slice(0, colon).trim() : '';
        if (!HOLDER_RE.test(name)) {
          // The line is not quoted back: it may hold a key.
          throw new MurError(
            'E-A2A-021',
            `A2A API keys file ${path}, line ${i + 1}: expected 'holder:key' with a holder name of letters, digits, '.', '_' or '-'`,
            {
              hint: 'one `holder:key` per line, e.g. `ci-bot:3f9a…`',
              location: { file: path, line: i + 1 },
            },
          );
        }
        keys.push({ name, key: line.slice(colon + 1).trim() });
      });
  }
  for (const k of keys) {
    if (k.key.length < MIN_API_KEY_LENGTH) {
      throw new MurError('E-A2A-021', `A2A API key of '${k.name}' in ${path} is shorter than ${MIN_API_KEY_LENGTH} characters`, {
        hint: 'use a long random key, e.g. `openssl rand -hex 32`',
        location: { file: path },
      });
    }
  }
  if (keys.length === 0) {
    throw new MurError('E-A2A-021', `no A2A API keys in ${path}`, { hint: 'add at least one `holder:key` (or one file per key)', location: { file: path } });
  }
  return keys;
}

/** Whether a bind address only takes connections from this machine. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
