/**
 * The resolved identity of a shell call, built BEFORE the spawn and handed to the `on-shell`
 * decision point (hooks.md "Policy hooks"; the `shell-event` fields of `murmur:hook/lifecycle`):
 *
 * - `binary`: the canonical absolute path the name resolved to along PATH, or the bare name;
 * - `argv`: the exact argument list passed to the executable (program name not included), untruncated;
 * - `script`: the `-c` body for a shell interpreter, else absent, untruncated;
 * - `recipe`: the make/just/npm-run body read from the workdir, else absent;
 * - `command`: display only — the argument list (or the script), truncated to 200 characters.
 *
 * A policy decides on binary, argv, script and recipe — never on command.
 */
import { commandDisplay, shellScript } from './argv.ts';
import { resolveRecipe } from './recipe.ts';
import { resolveBinary, DEFAULT_PATH } from './resolve.ts';

export interface ShellIdentity {
  binary: string;
  argv: string[];
  script?: string;
  recipe?: string;
  command: string;
  /** The name as invoked (what the allowlist was checked against). */
  invoked: string;
  /** False when `binary` is the bare name because nothing resolved. */
  resolved: boolean;
}

export interface ShellIdentityInput {
  binary: string;
  args: readonly string[];
  workdir: string;
  /** Host environment; its PATH is used for resolution. */
  env?: Readonly<Record<string, string | undefined>>;
}

export async function shellEventIdentity(input: ShellIdentityInput): Promise<ShellIdentity> {
  const r = await resolveBinary(input.binary, { pathVar: input.env?.PATH ?? DEFAULT_PATH, cwd: input.workdir });
  const argv = [...input.args];
  const script = shellScript(input.binary, argv);
  const recipe = await resolveRecipe(input.workdir, input.binary, argv);
  const id: ShellIdentity = { binary: r.binary, argv, command: commandDisplay(argv, script), invoked: input.binary, resolved: r.resolved };
  if (script !== undefined) id.script = script;
  if (recipe !== undefined) id.recipe = recipe;
  return id;
}
