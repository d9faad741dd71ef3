/**
 * The WIT packages are parsed by real WIT tooling (wasm-tools inside jco: embed each world into a
 * dummy module, build a component, print its WIT back) and their interfaces and worlds are checked
 * against the tables of the spec, so the two cannot drift.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT, listWitPackages, witDirFor } from '../../runtime/wit/packages.ts';

// The contract lives beside the repository (../shared/spec), as on every machine and in CI.
const SPEC_DIR = process.env.MURMUR_SPEC_DIR ?? join(PROJECT_ROOT, '..', 'shared', 'spec');
const SPEC = join(SPEC_DIR, 'wit-interfaces.md');

/** Rows of the spec's "Interfaces" table: `murmur:pkg/iface`. */
function specInterfaces(): string[] {
  const text = readFileSync(SPEC, 'utf8');
  const section = text.split('## Interfaces')[1]!.split('## Worlds')[0]!;
  return [...section.matchAll(/^\| \[`(murmur:[a-z-]+\/[a-z-]+)`\]/gm)].map((m) => m[1]!);
}

/** Rows of the spec's "Worlds" table: world → {imports, exports}. */
function specWorlds(): Record<string, { imports: string[]; exports: string[] }> {
  const text = readFileSync(SPEC, 'utf8');
  const section = text.split('## Worlds')[1]!.split('Agent capsules compile')[0]!;
  const out: Record<string, { imports: string[]; exports: string[] }> = {};
  for (const m of section.matchAll(/^\| `([a-z-]+)` \| (.*?) \| (.*?) \|/gm)) {
    const names = (cell: string) => [...cell.matchAll(/`([a-z-]+\/[a-z-]+)`/g)].map((x) => x[1]!);
    out[m[1]!] = { imports: names(m[2]!), exports: names(m[3]!) };
  }
  return out;
}

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
  it('declare every interface of the spec table, each in a versioned package', () => {
    const declared = listWitPackages().flatMap((p) => p.interfaces.map((i) => `${p.name}/${i}`));
    const spec = specInterfaces();
    expect(spec).toHaveLength(13);
    for (const iface of spec) expect(declared, iface).toContain(iface);
    for (const p of listWitPackages()) expect(p.version, p.name).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('pin the versions the reference runtime fixes', () => {
    const v = Object.fromEntries(listWitPackages().map((p) => [p.name, p.version]));
    for (const name of ['murmur:tool', 'murmur:tool-registry', 'murmur:capsule', 'murmur:task', 'murmur:text', 'murmur:message', 'murmur:artifact-manager', 'murmur:shell']) {
      expect(v[name], name).toBe('0.1.0');
    }
    expect(v['murmur:hook']).toBe('0.9.0');
  });

  it('declare the five worlds of the spec table with exactly its imports and exports', async () => {
    const spec = specWorlds();
    expect(Object.keys(spec).sort()).toEqual(['capsule', 'driver', 'hook', 'runtime-host', 'tool']);
    const where: Record<string, string> = { capsule: 'guest', tool: 'guest', driver: 'guest', hook: 'runtime', 'runtime-host': 'host' };
    for (const [world, row] of Object.entries(spec)) {
      const wit = await printedWorld(where[world]!, world);
      const exported = [...wit.matchAll(/^\s*export (murmur:[a-z-]+\/[a-z-]+)@/gm)].map((m) => m[1]!.replace(/^murmur:/, ''));
      const imported = [...wit.matchAll(/^\s*import (murmur:[a-z-]+\/[a-z-]+)@/gm)].map((m) => m[1]!.replace(/^murmur:/, ''));
      expect(exported.sort(), `${world} exports`).toEqual([...row.exports].sort());
      // Printed imports also list type-only dependencies (e.g. tool/run for tool-registry's types).
      for (const i of row.imports) expect(imported, `${world} imports ${i}`).toContain(i);
      const typeOnly = imported.filter((i) => !row.imports.includes(i));
      for (const t of typeOnly) expect(['tool/run', 'hook/lifecycle'], `${world}: unexpected import ${t}`).toContain(t);
    }
  });

  it('hook-output has the seven arms, and events carry the decision-point fields', () => {
    const text = readFileSync(join(PROJECT_ROOT, 'wit/hook/lifecycle.wit'), 'utf8');
    const variant = /variant hook-output \{([\s\S]*?)\n  \}/.exec(text)![1]!;
    const arms = [...variant.matchAll(/^\s*([a-z-]+)(?:\(|,)/gm)].map((m) => m[1]);
    expect(arms).toEqual(['none', 'replace-context', 'write-manifests', 'artifact', 'reopen-task', 'seed-context', 'deny']);
    const shell = /record shell-event \{([\s\S]*?)\n  \}/.exec(text)![1]!;
    expect(shell).toMatch(/argv: list<string>/);
    expect(shell).toMatch(/script: option<string>/);
    expect(shell).toMatch(/recipe: option<string>/);
    expect(shell).toMatch(/outcome: option<shell-outcome>/);
    const tool = /record tool-event \{([\s\S]*?)\n  \}/.exec(text)![1]!;
    expect(tool).toMatch(/input: string/);
    expect(tool).toMatch(/outcome: option<tool-outcome>/);
    const message = /record message \{([\s\S]*?)\n  \}/.exec(text)![1]!;
    expect(message).toMatch(/id: option<string>/);
    expect(message).toMatch(/source-id: option<string>/);
  });

  it('murmur:runtime/inference matches runtime-inference.md (records, fields, function)', () => {
    const seed = readFileSync(join(SPEC_DIR, 'runtime-inference.md'), 'utf8');
    const ours = readFileSync(join(PROJECT_ROOT, 'wit/runtime/inference.wit'), 'utf8');
    const body = (t: string) => t.slice(t.indexOf('interface inference')).replace(/use murmur:hook\/lifecycle@[0-9.]+/, 'use murmur:hook/lifecycle@X').trim();
    // Only the package versions differ (documented in docs/wit.md): the interface body is verbatim.
    expect(body(ours)).toBe(body(seed));
  });
});
