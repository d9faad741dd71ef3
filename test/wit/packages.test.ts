/**
 * The WIT packages are parsed by real WIT tooling (wasm-tools inside jco: embed each world into a
 * dummy module, build a component, print its WIT back) and their interfaces and worlds are checked
 * against the project's own tables (wit/tables.json), so the two cannot drift. The tables are held
 * to the spec documents by `npm run check:spec` (scripts/check-spec.ts), a separate CI step: these
 * tests need nothing outside the repository.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT, listWitPackages, witDirFor } from '../../runtime/wit/packages.ts';

interface Tables {
  interfaces: string[];
  worlds: Record<string, { folder: string; imports: string[]; exports: string[] }>;
  typeOnlyImports: string[];
  pinnedVersions: Record<string, string>;
  hookOutputArms: string[];
  runtimeInference: { records: Record<string, string[]>; functions: string[] };
}
const TABLES = JSON.parse(readFileSync(join(PROJECT_ROOT, 'wit', 'tables.json'), 'utf8')) as Tables;

let jco: typeof import('@bytecodealliance/jco');
beforeAll(async () => {
  const { _setPreopens } = await import('@bytecodealliance/preview2-shim/filesystem');
  (_setPreopens as (p: Record<string, string>) => void)({ [PROJECT_ROOT]: PROJECT_ROOT });
  jco = await import('@bytecodealliance/jco');
});

async function printedWorld(folder: string, world: string): Promise<string> {
  const core = await jco.componentEmbed({ dummy: true, witPath: witDirFor(folder), world });
  const component = await jco.componentNew(core, []);
  return jco.componentWit(component);
}

describe('WIT packages', () => {
  it('declare every interface of the table, each in a versioned package', () => {
    const declared = listWitPackages().flatMap((p) => p.interfaces.map((i) => `${p.name}/${i}`));
    expect(TABLES.interfaces).toHaveLength(13);
    for (const iface of TABLES.interfaces) expect(declared, iface).toContain(iface);
    for (const p of listWitPackages()) expect(p.version, p.name).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('pin the versions the reference runtime fixes', () => {
    const v = Object.fromEntries(listWitPackages().map((p) => [p.name, p.version]));
    for (const [name, version] of Object.entries(TABLES.pinnedVersions)) expect(v[name], name).toBe(version);
    expect(v['murmur:hook']).toBe('0.9.0');
  });

  it('declare the five worlds of the table with exactly its imports and exports', async () => {
    expect(Object.keys(TABLES.worlds).sort()).toEqual(['capsule', 'driver', 'hook', 'runtime-host', 'tool']);
    for (const [world, row] of Object.entries(TABLES.worlds)) {
      const wit = await printedWorld(row.folder, world);
      const exported = [...wit.matchAll(/^\s*export (murmur:[a-z-]+\/[a-z-]+)@/gm)].map((m) => m[1]!.replace(/^murmur:/, ''));
      const imported = [...wit.matchAll(/^\s*import (murmur:[a-z-]+\/[a-z-]+)@/gm)].map((m) => m[1]!.replace(/^murmur:/, ''));
      expect(exported.sort(), `${world} exports`).toEqual([...row.exports].sort());
      // Printed imports also list type-only dependencies (e.g. tool/run for tool-registry's types).
      for (const i of row.imports) expect(imported, `${world} imports ${i}`).toContain(i);
      const typeOnly = imported.filter((i) => !row.imports.includes(i));
      for (const t of typeOnly) expect(TABLES.typeOnlyImports, `${world}: unexpected import ${t}`).toContain(t);
    }
  });

  it('hook-output has the seven arms, and events carry the decision-point fields', () => {
    const text = readFileSync(join(PROJECT_ROOT, 'wit/hook/lifecycle.wit'), 'utf8');
    const variant = /variant hook-output \{([\s\S]*?)\n {2}\}/.exec(text)![1]!;
    const arms = [...variant.matchAll(/^\s*([a-z-]+)(?:\(|,)/gm)].map((m) => m[1]);
    expect(arms).toEqual(TABLES.hookOutputArms);
    const shell = /record shell-event \{([\s\S]*?)\n {2}\}/.exec(text)![1]!;
    expect(shell).toMatch(/argv: list<string>/);
    expect(shell).toMatch(/script: option<string>/);
    expect(shell).toMatch(/recipe: option<string>/);
    expect(shell).toMatch(/outcome: option<shell-outcome>/);
    const tool = /record tool-event \{([\s\S]*?)\n {2}\}/.exec(text)![1]!;
    expect(tool).toMatch(/input: string/);
    expect(tool).toMatch(/outcome: option<tool-outcome>/);
    const message = /record message \{([\s\S]*?)\n {2}\}/.exec(text)![1]!;
    expect(message).toMatch(/id: option<string>/);
    expect(message).toMatch(/source-id: option<string>/);
  });

  it('murmur:runtime/inference has the records, fields and function of the table', () => {
    const text = readFileSync(join(PROJECT_ROOT, 'wit/runtime/inference.wit'), 'utf8').replace(/\/\/.*$/gm, '');
    for (const [record, fields] of Object.entries(TABLES.runtimeInference.records)) {
      const body = new RegExp(`record ${record} \\{([\\s\\S]*?)\\}`).exec(text)?.[1];
      expect(body, record).toBeDefined();
      expect(
        [...body!.matchAll(/^\s*([a-z-]+):/gm)].map((m) => m[1]),
        record,
      ).toEqual(fields);
    }
    const functions = [...text.matchAll(/^\s*([a-z-]+): func\(/gm)].map((m) => m[1]);
    expect(functions).toEqual(TABLES.runtimeInference.functions);
  });
});
