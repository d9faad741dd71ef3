/**
 * Holds the code to docs/architecture.md: every relative import of every .ts/.mjs file under
 * runtime/ and operator/ points to its own folder or to a folder on a lower layer of the doc's
 * table, no folder cycle exists, and the table names exactly the folders there are.
 *
 * Imports are read with a small scanner (test/source-scan.ts: comments and string contents skipped) rather than the
 * TypeScript compiler: the project's `typescript` is the native 7.x build, which has no JS API to
 * parse with, and the import forms used here are few (`import … from`, `export … from`,
 * `import '…'`, `import('…')`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { folderCycles, importSpecifiers, sourceFiles } from './source-scan.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DOC = join(ROOT, 'docs', 'architecture.md');
const TOPS = ['runtime', 'operator'] as const;

/** `| 3 | \`runtime/session/\` | … |` → folder key → layer. */
export function parseLayerTable(markdown: string): Map<string, number> {
  const layers = new Map<string, number>();
  for (const [i, line] of markdown.split('\n').entries()) {
    const m = /^\|\s*(\d+)\s*\|\s*`([^`]+)`\s*\|/.exec(line);
    if (!m) continue;
    const key = m[2]!;
    if (layers.has(key)) throw new Error(`docs/architecture.md:${i + 1}: ${key} has a second row`);
    layers.set(key, Number(m[1]));
  }
  return layers;
}

/**
 * The folders the table splits into rows of their own sub-folders: a row for `runtime/a2a/store/`
 * makes `runtime/a2a/` split, so each of its sub-folders is a folder with a layer (the order inside
 * it is held like the order between folders) and files directly in it are `runtime/a2a/*.ts`.
 */
export function splitFolders(layers: ReadonlyMap<string, number>): Set<string> {
  const out = new Set<string>();
  for (const key of layers.keys()) {
    const parts = key.split('/'); // `runtime/a2a/` → ['runtime', 'a2a', '']
    if (parts.length >= 3 && parts[2]) out.add(`${parts[0]}/${parts[1]}/`);
  }
  return out;
}

/**
 * The folder key of a repository path: `runtime/hooks/bus.ts` → `runtime/hooks/`, `runtime/errors.ts`
 * → `runtime/*.ts`; in a split folder, `runtime/a2a/store/store.ts` → `runtime/a2a/store/`.
 */
export function folderOf(repoPath: string, split: ReadonlySet<string> = new Set()): string {
  const parts = repoPath.split('/');
  if (parts.length === 2) return `${parts[0]}/*.ts`;
  const top = `${parts[0]}/${parts[1]}/`;
  if (!split.has(top)) return top;
  return parts.length === 3 ? `${top}*.ts` : `${top}${parts[2]}/`;
}

export interface Edge {
  file: string;
  spec: string;
  from: string;
  to: string;
}

/**
 * The runtime folders the operator may import: the leaf tables, and the manifest validator it runs
 * on every rendered murmur.yaml (so a Capsule the runtime would refuse is Ready=False, not a crash loop).
 */
export const OPERATOR_MAY_IMPORT: readonly string[] = ['runtime/contracts/', 'runtime/manifest/'];

/** What breaks the layering, one line each: unknown folders, imports sideways or up, cross-root imports. */
export function violations(edges: readonly Edge[], layers: ReadonlyMap<string, number>): string[] {
  const out: string[] = [];
  for (const e of edges) {
    if (e.from === e.to) continue;
    const lf = layers.get(e.from);
    const lt = layers.get(e.to);
    const where = `${e.file} imports '${e.spec}'`;
    if (!TOPS.some((t) => e.to.startsWith(`${t}/`))) out.push(`${where}: outside runtime/ and operator/`);
    else if (e.from.startsWith('operator/') && e.to.startsWith('runtime/') && !OPERATOR_MAY_IMPORT.includes(e.to))
      out.push(`${where}: operator/ may import only ${OPERATOR_MAY_IMPORT.join(' and ')} of the runtime`);
    else if (e.from.startsWith('runtime/') && e.to.startsWith('operator/')) out.push(`${where}: runtime/ never imports operator/`);
    else if (lf === undefined) out.push(`${where}: ${e.from} has no row in docs/architecture.md`);
    else if (lt === undefined) out.push(`${where}: ${e.to} has no row in docs/architecture.md`);
    else if (lt >= lf) out.push(`${where}: ${e.from} (layer ${lf}) → ${e.to} (layer ${lt}) does not point down`);
  }
  return out;
}

function repoPath(abs: string): string {
  return relative(ROOT, abs).split(sep).join('/');
}

function projectEdges(split: ReadonlySet<string>): Edge[] {
  const edges: Edge[] = [];
  for (const top of TOPS) {
    for (const abs of sourceFiles(join(ROOT, top))) {
      const file = repoPath(abs);
      for (const spec of importSpecifiers(readFileSync(abs, 'utf8'))) {
        if (!spec.startsWith('.')) continue; // packages and node: builtins
        const target = repoPath(resolve(dirname(abs), spec));
        edges.push({ file, spec, from: folderOf(file, split), to: folderOf(target, split) });
      }
    }
  }
  return edges;
}

/** The folder keys under `dir` (`runtime`, or a split folder such as `runtime/a2a`), split folders listed by their sub-folders. */
function existingFolders(dir: string, split: ReadonlySet<string>): string[] {
  const out: string[] = [];
  const entries = readdirSync(join(ROOT, dir), { withFileTypes: true });
  if (entries.some((e) => e.isFile() && /\.(ts|mts|mjs)$/.test(e.name))) out.push(`${dir}/*.ts`);
  for (const e of entries) {
    if (!e.isDirectory() || !sourceFiles(join(ROOT, dir, e.name)).length) continue;
    const key = `${dir}/${e.name}/`;
    out.push(...(split.has(key) ? existingFolders(`${dir}/${e.name}`, new Set()) : [key]));
  }
  return out.sort();
}

describe('docs/architecture.md holds the code', () => {
  const layers = parseLayerTable(readFileSync(DOC, 'utf8'));
  const split = splitFolders(layers);
  const edges = projectEdges(split);

  it('names every folder under runtime/ and operator/, and only folders that exist', () => {
    expect([...layers.keys()].sort()).toEqual(TOPS.flatMap((t) => existingFolders(t, split)).sort());
  });

  it('every import points to its own folder or down a layer', () => {
    expect(edges.length).toBeGreaterThan(100); // the scanner found the imports
    expect(violations(edges, layers)).toEqual([]);
  });

  it('no two folders import each other, directly or round a cycle', () => {
    expect(folderCycles(edges)).toEqual([]);
  });
});

describe('the architecture checker', () => {
  const e = (from: string, to: string, file = `${from}x.ts`): Edge => ({ file, spec: '…', from, to });

  it('reads every import form and skips comments and strings', () => {
    const src = [
      "import { a } from './a.ts';",
      "import type {\n  B,\n} from '../b/b.ts';",
      "export * from './c.ts';",
      "import './d.ts';",
      "const m = await import('../e/e.ts');",
      "// import { x } from '../commented/x.ts';",
      "/* export { y } from '../blocked/y.ts'; */",
      'const s = "import { z } from \'../string/z.ts\'";',
      "const t = `from '../template/t.ts'`;",
      "const boot = fileURLToPath(new URL('../f/boot.mjs', import.meta.url));",
      "const here = new URL('.', import.meta.url); const api = new URL('/v2/', base);",
    ].join('\n');
    expect(importSpecifiers(src)).toEqual(['./a.ts', '../b/b.ts', './c.ts', './d.ts', '../e/e.ts', '../f/boot.mjs']);
  });

  it('reports an import that points up or sideways, and one into an unlisted folder', () => {
    const layers = new Map([
      ['runtime/a/', 0],
      ['runtime/b/', 1],
      ['runtime/c/', 1],
    ]);
    expect(violations([e('runtime/b/', 'runtime/a/')], layers)).toEqual([]);
    expect(violations([e('runtime/a/', 'runtime/b/'), e('runtime/b/', 'runtime/c/'), e('runtime/b/', 'runtime/z/')], layers)).toEqual([
      "runtime/a/x.ts imports '…': runtime/a/ (layer 0) → runtime/b/ (layer 1) does not point down",
      "runtime/b/x.ts imports '…': runtime/b/ (layer 1) → runtime/c/ (layer 1) does not point down",
      "runtime/b/x.ts imports '…': runtime/z/ has no row in docs/architecture.md",
    ]);
  });

  it('lets the operator import only runtime/contracts/ and runtime/manifest/ of the runtime', () => {
    const layers = new Map([
      ['runtime/contracts/', 0],
      ['runtime/manifest/', 1],
      ['runtime/host/', 2],
      ['operator/api/', 5],
    ]);
    expect(violations([e('operator/api/', 'runtime/contracts/'), e('operator/api/', 'runtime/manifest/')], layers)).toEqual([]);
    expect(violations([e('operator/api/', 'runtime/host/'), e('runtime/host/', 'operator/api/')], layers)).toHaveLength(2);
  });

  it('makes each sub-folder of a folder the table splits a folder of its own, with its own layer', () => {
    const layers = new Map([
      ['runtime/a/', 0],
      ['runtime/b/x/', 1],
      ['runtime/b/y/', 2],
      ['runtime/b/*.ts', 3],
    ]);
    const split = splitFolders(layers);
    expect([...split]).toEqual(['runtime/b/']);
    expect(folderOf('runtime/b/x/deep/f.ts', split)).toBe('runtime/b/x/');
    expect(folderOf('runtime/b/f.ts', split)).toBe('runtime/b/*.ts');
    expect(folderOf('runtime/a/sub/f.ts', split)).toBe('runtime/a/');
    const edge = (file: string, target: string): Edge => ({ file, spec: '…', from: folderOf(file, split), to: folderOf(target, split) });
    expect(violations([edge('runtime/b/y/f.ts', 'runtime/b/x/g.ts'), edge('runtime/b/f.ts', 'runtime/b/y/f.ts')], layers)).toEqual([]);
    expect(violations([edge('runtime/b/x/g.ts', 'runtime/b/y/f.ts')], layers)).toEqual([
      "runtime/b/x/g.ts imports '…': runtime/b/x/ (layer 1) → runtime/b/y/ (layer 2) does not point down",
    ]);
  });

  it('finds a cycle of three folders', () => {
    expect(folderCycles([e('runtime/a/', 'runtime/b/'), e('runtime/b/', 'runtime/c/'), e('runtime/c/', 'runtime/a/')])).toEqual([
      'runtime/a/ → runtime/b/ → runtime/c/ → runtime/a/',
    ]);
    expect(folderCycles([e('runtime/a/', 'runtime/b/'), e('runtime/a/', 'runtime/c/'), e('runtime/b/', 'runtime/c/')])).toEqual([]);
  });
});
