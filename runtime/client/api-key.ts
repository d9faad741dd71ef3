/**
 * The API key `mur` sends to an API-key capsule: from a file (`--api-key-file`) or from
 * `$MURMUR_A2A_API_KEY`. Never printed; a refused key is reported without it.
 */
import { readFileSync } from 'node:fs';
import { MurError } from '../errors.ts';

export const API_KEY_ENV = 'MURMUR_A2A_API_KEY';

/**
 * The file holds the key alone (first non-blank, non-`#` line), the form a Secret's key file
 * has when mounted or written with `kubectl get secret … -o jsonpath | base64 -d > key`.
 */
export function readApiKey(file: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw new MurError('E-CLI-031', `--api-key-file ${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, {
        location: { file },
        hint: 'name a readable file holding the key',
      });
    }
    const line = text
      .split(/\r?\n/)
      .map((l) => l.trim())
      .find((l) => l !== '' && !l.startsWith('#'));
    if (!line) throw new MurError('E-CLI-031', `--api-key-file ${file}: the file holds no key`, { location: { file }, hint: 'put the key on the first line' });
    if (/\s/.test(line))
      throw new MurError('E-CLI-031', `--api-key-file ${file}: line 1 is not a single key (it contains whitespace)`, {
        location: { file, line: 1 },
        hint: 'the file holds the key alone, not holder:key lines or a header',
      });
    return line;
  }
  const v = env[API_KEY_ENV]?.trim();
  return v ? v : undefined;
}
