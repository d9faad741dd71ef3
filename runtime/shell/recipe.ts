/**
 * `shell-event.recipe`: the body of the recipe a build-tool call names, read out of the workdir
 * (wit-interfaces.md "Event field notes", completed in spec/README.md):
 *
 * | Invocation       | Body                                                                      |
 * |------------------|---------------------------------------------------------------------------|
 * | `make <target>`  | the target's recipe lines, from `GNUmakefile`, `makefile` or `Makefile`    |
 * | `just <recipe>`  | the recipe's indented body, from `justfile`, `.justfile`, `Justfile`, `JUSTFILE` |
 * | `npm run <script>` | the script's body from `package.json` `scripts`                         |
 *
 * `undefined` means no body was resolved and says nothing about the call. Whenever the invocation
 * would read a different file or directory than the one looked at here (`make -f/-C/--eval`,
 * `just --justfile/--working-directory`, `npm --prefix/--workspace`), the answer is `undefined`
 * rather than a body that is not the one that will run. Only the named target's own recipe is
 * returned: prerequisites' recipes, `include`d makefiles, npm `pre`/`post` scripts and just
 * dependencies are not followed. With no target named, make's default goal / just's first recipe
 * is used.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

export const MAKEFILE_NAMES = ['GNUmakefile', 'makefile', 'Makefile'] as const;
export const JUSTFILE_NAMES = ['justfile', '.justfile', 'Justfile', 'JUSTFILE'] as const;

async function readFirst(workdir: string, names: readonly string[]): Promise<string | undefined> {
  for (const n of names) {
    try {
      return await readFile(path.join(workdir, n), 'utf8');
    } catch {
      // not there or unreadable: try the next name
    }
  }
  return undefined;
}

/** The recipe body for `binary args…` run in `workdir`, or `undefined`. */
export async function resolveRecipe(workdir: string, binary: string, args: readonly string[]): Promise<string | undefined> {
  const tool = path.basename(binary);
  if (tool === 'make' || tool === 'gmake') {
    const targets = makeTargets(args);
    if (targets === undefined) return undefined;
    const text = await readFirst(workdir, MAKEFILE_NAMES);
    return text === undefined ? undefined : makeRecipe(text, targets);
  }
  if (tool === 'just') {
    const name = justRecipeName(args);
    if (name === undefined) return undefined;
    const text = await readFirst(workdir, JUSTFILE_NAMES);
    return text === undefined ? undefined : justRecipe(text, name === '' ? undefined : name);
  }
  if (tool === 'npm') {
    const name = npmScriptName(args);
    if (name === undefined) return undefined;
    const text = await readFirst(workdir, ['package.json']);
    if (text === undefined) return undefined;
    try {
      const pkg = JSON.parse(text) as { scripts?: Record<string, unknown> };
      const body = pkg.scripts?.[name];
      return typeof body === 'string' ? body : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------- make

const MAKE_REDIRECTING = /^(-[^-]*[fCE]|--file|--makefile|--directory|--eval)/;
const MAKE_OPTS_WITH_VALUE = new Set(['-o', '-W', '-I', '--old-file', '--assume-old', '--what-if', '--new-file', '--assume-new', '--include-dir']);

/** The targets `make args` names ([] = default goal), or `undefined` if another makefile/dir is used. */
export function makeTargets(args: readonly string[]): string[] | undefined {
  const targets: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      targets.push(...args.slice(i + 1).filter((t) => !t.includes('=')));
      break;
    }
    if (a.startsWith('-')) {
      if (MAKE_REDIRECTING.test(a)) return undefined;
      if (MAKE_OPTS_WITH_VALUE.has(a)) i++;
      else if ((a === '-j' || a === '-l' || a === '--jobs' || a === '--load-average') && /^\d+(\.\d+)?$/.test(args[i + 1] ?? '')) i++;
      continue;
    }
    if (a.includes('=')) continue; // VAR=value
    targets.push(a);
  }
  return targets;
}

interface MakeRule {
  targets: string[];
  lines: string[];
}

function isMakeAssignment(line: string): boolean {
  const eq = line.indexOf('=');
  const colon = line.indexOf(':');
  if (eq < 0) return false;
  if (colon < 0 || eq < colon) return true;
  // `X := y`, `X ::= y`, `X :::= y`
  return /^[^:]*::?:?=/.test(line);
}

function parseMakefile(text: string): MakeRule[] {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  const rules: MakeRule[] = [];
  let cur: MakeRule | undefined;
  let continued = false;
  for (const line of lines) {
    if (cur && (continued || line.startsWith('\t'))) {
      cur.lines.push(continued ? line : line.slice(1));
      continued = line.endsWith('\\');
      continue;
    }
    continued = false;
    if (cur && (line.trim() === '' || /^\s*#/.test(line))) continue; // blank/comment lines do not end a recipe
    cur = undefined;
    if (line.startsWith('\t') || line.trim() === '' || /^\s*#/.test(line)) continue;
    if (/^\s*(define|endef|ifeq|ifneq|ifdef|ifndef|else|endif|include|-include|sinclude|export|unexport|override|vpath)\b/.test(line)) continue;
    if (isMakeAssignment(line)) continue;
    const m = /^([^:#]+?)\s*(::?)(?!=)(.*)$/.exec(line);
    if (!m) continue;
    const targets = m[1]!.trim().split(/\s+/);
    const rest = m[3]!;
    const rule: MakeRule = { targets, lines: [] };
    const semi = rest.indexOf(';');
    if (semi >= 0) rule.lines.push(rest.slice(semi + 1).trimStart());
    rules.push(rule);
    cur = rule;
    continued = false;
  }
  return rules;
}

/** The recipe lines of `targets` (or the default goal) in makefile `text`; `undefined` if none is defined. */
export function makeRecipe(text: string, targets: readonly string[]): string | undefined {
  const rules = parseMakefile(text);
  let wanted = [...targets];
  if (wanted.length === 0) {
    const goal = rules.flatMap((r) => r.targets).find((t) => !t.startsWith('.') && !t.includes('%'));
    if (goal === undefined) return undefined;
    wanted = [goal];
  }
  const bodies: string[] = [];
  for (const t of wanted) {
    const mine = rules.filter((r) => r.targets.includes(t));
    if (mine.length === 0) return undefined;
    const withLines = mine.filter((r) => r.lines.length > 0);
    bodies.push(withLines.flatMap((r) => trimTrailingBlank(r.lines)).join('\n'));
  }
  return bodies.join('\n');
}

function trimTrailingBlank(lines: string[]): string[] {
  let end = lines.length;
  while (end > 0 && lines[end - 1]!.trim() === '') end--;
  return lines.slice(0, end);
}

// ---------------------------------------------------------------------------------------------- just

/** The recipe `just args` names ('' = the default/first recipe), or `undefined` if another justfile is used. */
export function justRecipeName(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a.startsWith('-')) {
      if (/^(-f|--justfile|-d|--working-directory|--global-justfile|-g)(=|$)/.test(a) || /^-[a-zA-Z]*[fdg]/.test(a)) return undefined;
      if (a === '--set') i += 2;
      else if (
        /^(--shell|--shell-arg|--dotenv-filename|--dotenv-path|--color|--list-heading|--list-prefix|--command|-c|--chooser|--dump-format|--timestamp-format)$/.test(
          a,
        )
      )
        i++;
      continue;
    }
    if (a.includes('=')) continue; // var=value overrides
    if (a.includes('::') || a.includes('/')) return undefined; // submodules / path-style: another justfile
    return a;
  }
  return '';
}

/** The indented body of recipe `name` (or the first recipe) in justfile `text`, following one alias. */
export function justRecipe(text: string, name: string | undefined): string | undefined {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  const aliases = new Map<string, string>();
  for (const l of lines) {
    const m = /^alias\s+([A-Za-z_][\w-]*)\s*:=\s*([A-Za-z_][\w-]*)\s*$/.exec(l);
    if (m) aliases.set(m[1]!, m[2]!);
  }
  const target = name === undefined ? undefined : (aliases.get(name) ?? name);
  const header = /^@?([A-Za-z_][\w-]*)(?:\s[^:]*)?:(?!=)/;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^\s/.test(line) || /^(alias|set|export|import|mod)\s/.test(line) || line.startsWith('#') || line.startsWith('[')) continue;
    const m = header.exec(line);
    if (!m) continue;
    if (target !== undefined && m[1] !== target) continue;
    const body: string[] = [];
    for (let j = i + 1; j < lines.length; j++) {
      const b = lines[j]!;
      if (b.trim() === '') {
        body.push('');
        continue;
      }
      if (!/^[ \t]/.test(b)) break;
      body.push(b);
    }
    const kept = trimTrailingBlank(body);
    const indent = kept.find((l) => l.trim() !== '')?.match(/^[ \t]*/)?.[0] ?? '';
    return kept.map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l.trimStart())).join('\n');
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------- npm

/** The script `npm run <script>` names, or `undefined` when it is not that form (or uses another dir). */
export function npmScriptName(args: readonly string[]): string | undefined {
  let i = 0;
  for (; i < args.length && args[i]!.startsWith('-'); i++) {
    if (/^(--prefix|-C|--workspace|-w|--workspaces|-ws)(=|$)/.test(args[i]!)) return undefined;
  }
  const verb = args[i];
  if (verb !== 'run' && verb !== 'run-script' && verb !== 'rum' && verb !== 'urn') return undefined;
  for (i++; i < args.length; i++) {
    const a = args[i]!;
    if (/^(--prefix|-C|--workspace|-w|--workspaces|-ws)(=|$)/.test(a)) return undefined;
    if (a.startsWith('-')) continue;
    return a;
  }
  return undefined;
}
