/**
 * The source scanning test/architecture.test.ts and test/code-shape.test.ts share: the source files
 * of a tree, the relative imports of a file, and the cycles of an import graph.
 *
 * Imports are read with a small scanner (comments and string contents skipped) rather than the
 * TypeScript compiler: the project's `typescript` is the native 7.x build, which has no JS API to
 * parse with, and the import forms used here are few (`import … from`, `export … from`,
 * `import '…'`, `import('…')`, `new URL('…', import.meta.url)`).
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The module specifiers a source imports, with comments and string/template contents skipped. */
export function importSpecifiers(src: string): string[] {
  const code = blankCommentsAndStrings(src);
  const out: string[] = [];
  // Positions are the same in `code` and `src`; the specifier itself is read from `src`.
  // `new URL('<file>', import.meta.url)`: a module loaded by path (a worker's entry) is a dependency too.
  const re = /\b(?:import|export)\b[\s\w{},*$]*?\bfrom\s*(['"])|\bimport\s*(['"])|\bimport\s*\(\s*(['"])|\bnew\s+URL\s*\(\s*(['"])/g;
  for (let m = re.exec(code); m; m = re.exec(code)) {
    const quote = m[1] ?? m[2] ?? m[3] ?? m[4]!;
    const start = m.index + m[0].length;
    const end = src.indexOf(quote, start);
    const spec = src.slice(start, end);
    if (m[4] !== undefined) {
      // only a file beside the module (not a folder such as '.', not an absolute URL)
      if (!/^\s*,\s*import\.meta\.url\b/.test(code.slice(end + 1)) || spec === '.' || spec.endsWith('/')) continue;
    }
    out.push(spec);
  }
  return out;
}

/** Replaces comments with spaces and the contents of string and template literals with spaces, quotes kept. */
function blankCommentsAndStrings(src: string): string {
  let out = '';
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    const n = src[i + 1];
    if (c === '/' && n === '/') {
      const e = src.indexOf('\n', i);
      const stop = e < 0 ? src.length : e;
      out += ' '.repeat(stop - i);
      i = stop;
    } else if (c === '/' && n === '*') {
      const e = src.indexOf('*/', i + 2);
      const stop = e < 0 ? src.length : e + 2;
      out += src.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop;
    } else if (c === "'" || c === '"' || c === '`') {
      let j = i + 1;
      while (j < src.length && src[j] !== c) j += src[j] === '\\' ? 2 : 1;
      // Keep an import's quoted specifier readable to the regex (quote, blanks, quote).
      out += c + src.slice(i + 1, j).replace(/[^\n]/g, ' ') + (j < src.length ? c : '');
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Cycles in a graph of `from → to` edges (folders, or files), each as `a → b → … → a`; self-edges ignored. */
export function folderCycles(edges: readonly { from: string; to: string }[]): string[] {
  const next = new Map<string, Set<string>>();
  for (const e of edges) if (e.from !== e.to) (next.get(e.from) ?? next.set(e.from, new Set()).get(e.from)!).add(e.to);
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (n: string): void => {
    state.set(n, 'open');
    stack.push(n);
    for (const m of [...(next.get(n) ?? [])].sort()) {
      if (state.get(m) === 'open') cycles.push([...stack.slice(stack.indexOf(m)), m].join(' → '));
      else if (!state.has(m)) visit(m);
    }
    stack.pop();
    state.set(n, 'done');
  };
  for (const n of [...next.keys()].sort()) if (!state.has(n)) visit(n);
  return cycles;
}

/** Every .ts/.mts/.mjs file under `dir`, recursively (absolute paths). */
export function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (/\.(ts|mts|mjs)$/.test(name)) out.push(p);
  }
  return out;
}
