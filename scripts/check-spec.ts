/**
 * `npm run check:spec`: holds the project's own WIT tables (wit/tables.json, which the tests hold
 * wit/ to) and wit/runtime/inference.wit to the spec documents, which are not part of the
 * repository: $MURMUR_SPEC_DIR names their folder. A separate step, not a test: `npm test` needs
 * nothing outside the repository. .ci/run runs it when MURMUR_SPEC_DIR is set and says it did not
 * otherwise; unset or pointing at a folder without the documents, it says so and fails.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROJECT_ROOT } from '../runtime/wit/packages.ts';

export interface WitTables {
  interfaces: string[];
  worlds: Record<string, { folder: string; imports: string[]; exports: string[] }>;
}

export function readTables(root = PROJECT_ROOT): WitTables {
  return JSON.parse(readFileSync(join(root, 'wit', 'tables.json'), 'utf8')) as WitTables;
}

function section(text: string, file: string, start: string, end: string): string {
  const i = text.indexOf(start);
  if (i < 0) throw new Error(`${file}: no "${start}" section`);
  const j = text.indexOf(end, i + start.length);
  return text.slice(i + start.length, j < 0 ? undefined : j);
}

/** The spec's "Interfaces" and "Worlds" tables of wit-interfaces.md. */
export function specTables(specDir: string): { interfaces: string[]; worlds: Record<string, { imports: string[]; exports: string[] }> } {
  const file = join(specDir, 'wit-interfaces.md');
  const text = readFileSync(file, 'utf8');
  const interfaces = [...section(text, file, '## Interfaces', '## Worlds').matchAll(/^\| \[`(murmur:[a-z-]+\/[a-z-]+)`\]/gm)].map((m) => m[1]!);
  const worlds: Record<string, { imports: string[]; exports: string[] }> = {};
  for (const m of section(text, file, '## Worlds', 'Agent capsules compile').matchAll(/^\| `([a-z-]+)` \| (.*?) \| (.*?) \|/gm)) {
    const names = (cell: string) => [...cell.matchAll(/`([a-z-]+\/[a-z-]+)`/g)].map((x) => x[1]!);
    worlds[m[1]!] = { imports: names(m[2]!), exports: names(m[3]!) };
  }
  return { interfaces, worlds };
}

/** The interface body of murmur:runtime/inference, package versions masked. */
export function inferenceBody(text: string): string {
  return text
    .slice(text.indexOf('interface inference'))
    .replace(/use murmur:hook\/lifecycle@[0-9.]+/, 'use murmur:hook/lifecycle@X')
    .trim();
}

const same = (a: readonly string[], b: readonly string[]): boolean => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());

/** Every difference between our tables (and inference.wit) and the spec documents in `specDir`. */
export function checkSpec(specDir: string, root = PROJECT_ROOT): string[] {
  const problems: string[] = [];
  const ours = readTables(root);
  const spec = specTables(specDir);
  for (const i of spec.interfaces) if (!ours.interfaces.includes(i)) problems.push(`interface ${i}: in the spec table, missing from wit/tables.json`);
  for (const i of ours.interfaces) if (!spec.interfaces.includes(i)) problems.push(`interface ${i}: in wit/tables.json, not in the spec table`);
  for (const w of new Set([...Object.keys(spec.worlds), ...Object.keys(ours.worlds)])) {
    const s = spec.worlds[w];
    const o = ours.worlds[w];
    if (!s || !o) {
      problems.push(`world ${w}: ${s ? 'missing from wit/tables.json' : 'not in the spec table'}`);
      continue;
    }
    if (!same(s.imports, o.imports))
      problems.push(`world ${w}: imports ${o.imports.join(', ') || '—'} in wit/tables.json, ${s.imports.join(', ') || '—'} in the spec`);
    if (!same(s.exports, o.exports))
      problems.push(`world ${w}: exports ${o.exports.join(', ') || '—'} in wit/tables.json, ${s.exports.join(', ') || '—'} in the spec`);
  }
  const specInference = join(specDir, 'runtime-inference.md');
  const oursInference = readFileSync(join(root, 'wit', 'runtime', 'inference.wit'), 'utf8');
  if (inferenceBody(oursInference) !== inferenceBody(readFileSync(specInference, 'utf8'))) {
    problems.push(`wit/runtime/inference.wit: the interface body differs from ${specInference} (only package versions may differ, docs/wit.md)`);
  }
  return problems;
}

export function main(env: NodeJS.ProcessEnv = process.env): number {
  if (!env.MURMUR_SPEC_DIR) {
    process.stderr.write('check:spec: MURMUR_SPEC_DIR is not set; set it to the folder holding the spec documents (wit-interfaces.md, runtime-inference.md)\n');
    return 1;
  }
  const specDir = resolve(env.MURMUR_SPEC_DIR);
  const needed = ['wit-interfaces.md', 'runtime-inference.md'].map((f) => join(specDir, f));
  const missing = needed.filter((f) => !existsSync(f));
  if (missing.length) {
    process.stderr.write(`check:spec: the spec documents are not there: ${missing.join(', ')}\n  set MURMUR_SPEC_DIR to the folder holding them\n`);
    return 1;
  }
  const problems = checkSpec(specDir);
  for (const p of problems) process.stderr.write(`check:spec: ${p}\n`);
  if (problems.length) return 1;
  process.stdout.write(`check:spec: wit/tables.json and wit/runtime/inference.wit agree with ${specDir}\n`);
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = main();
