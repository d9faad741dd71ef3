/**
 * The allowlist check and binary resolution for the shell tool.
 *
 * - **Allowlist**: `binary` must appear in `capabilities.shell.allow`, compared as the exact
 *   string the caller invoked (so `git` allows `git`, not `/tmp/evil/git` or `./git`). Anything else
 *   is refused with `ShellNotAllowedError` (E-SHELL-001) before any file is touched or process spawned.
 * - **Resolution** (`shell-event.binary`): a bare name is looked up along PATH (first executable
 *   regular file wins) and canonicalised with realpath, e.g. `python3` → `/usr/bin/python3.12`; a
 *   name with a `/` is taken relative to the working directory. When nothing resolves, the bare
 *   invoked name is returned. The resolved path is what gets executed (argv[0] stays the invoked
 *   name), so the identity a policy hook judges is the program that runs.
 */
import { constants as fsc } from 'node:fs';
import { access, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { MurError } from '../errors.ts';

export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export class ShellNotAllowedError extends MurError {
  readonly binary: string;
  readonly allow: readonly string[];
  constructor(binary: string, allow: readonly string[]) {
    super(
      'E-SHELL-001',
      `shell binary ${JSON.stringify(binary)} is not in capabilities.shell.allow (allowed: ${allow.length ? allow.map((a) => JSON.stringify(a)).join(', ') : 'none'})`,
      {
        hint: `add ${JSON.stringify(binary)} to capabilities.shell.allow in murmur.yaml if the capsule should run it, or use an allowed binary`,
        location: { field: 'capabilities.shell.allow' },
      },
    );
    this.name = 'ShellNotAllowedError';
    this.binary = binary;
    this.allow = [...allow];
  }
}

export function isShellAllowed(binary: string, allow: readonly string[]): boolean {
  return binary !== '' && allow.includes(binary);
}

/** Throws `ShellNotAllowedError` unless `binary` is allowlisted. */
export function assertShellAllowed(binary: string, allow: readonly string[]): void {
  if (!isShellAllowed(binary, allow)) throw new ShellNotAllowedError(binary, allow);
}

async function executableFile(p: string): Promise<boolean> {
  try {
    const st = await stat(p);
    if (!st.isFile()) return false;
    await access(p, fsc.X_OK);
    return true;
  } catch {
    return false;
  }
}

export interface ResolvedBinary {
  /** Canonical absolute path, or the bare invoked name when nothing resolved. */
  binary: string;
  resolved: boolean;
}

/** Resolve `name` against `pathVar` (or relative to `cwd` when it holds a `/`). */
export async function resolveBinary(name: string, opts: { pathVar?: string; cwd: string }): Promise<ResolvedBinary> {
  const candidates: string[] = [];
  if (name.includes('/')) candidates.push(path.resolve(opts.cwd, name));
  else if (name !== '') {
    for (const dir of (opts.pathVar ?? DEFAULT_PATH).split(path.delimiter)) {
      // Empty and relative entries would search the workdir, where the capsule could plant a
      // binary that shadows an allowed one: they are skipped.
      if (dir === '' || !path.isAbsolute(dir)) continue;
      candidates.push(path.join(dir, name));
    }
  }
  for (const c of candidates) {
    if (await executableFile(c)) {
      try {
        return { binary: await realpath(c), resolved: true };
      } catch {
        // gone between the check and realpath: try the next candidate
      }
    }
  }
  return { binary: name, resolved: false };
}
