/**
 * The project's WIT packages (wit/<folder>/*.wit) and a resolver that lays out a directory
 * wit-parser can load for any one of them: the root package's files plus every other package
 * under deps/. Used by the fixture build, the WIT tests and anyone componentizing a guest.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, existsSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const up2 = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The checkout (or image /app): compiled, this file is dist/runtime/wit/packages.js, one folder deeper. */
export const PROJECT_ROOT = basename(up2) === 'dist' && !existsSync(join(up2, 'package.json')) ? dirname(up2) : up2;
export const WIT_ROOT = join(PROJECT_ROOT, 'wit');

/**
 * The folder the runtime's writable caches sit in besides the component cache (the bundled
 * component worker, the token tables): MURMUR_COMPONENT_CACHE's parent, which is writable wherever
 * the runtime runs (a read-only image sets it under its writable volume), else the checkout's .cache/.
 */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  return env.MURMUR_COMPONENT_CACHE ? dirname(env.MURMUR_COMPONENT_CACHE) : join(PROJECT_ROOT, '.cache');
}

/**
 * Read-only caches consulted before the writable one (`MURMUR_COMPONENT_CACHE_SEED`, a
 * `:`-separated list of component-cache folders): the runtime image carries what its build made
 * (host/transpile-cache.ts says why).
 */
export function seedCacheDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.MURMUR_COMPONENT_CACHE_SEED ?? '').split(':').filter((d) => d !== '');
}

/**
 * The read-only counterparts of cacheRoot(): the folder each seeded component cache sits in, laid
 * out as the writable one (the image's token tables: /opt/murmur/tokens beside /opt/murmur/components).
 */
export function seedRoots(env: NodeJS.ProcessEnv = process.env): string[] {
  return seedCacheDirs(env).map((d) => dirname(d));
}

export interface WitPackage {
  /** Folder under wit/. */
  folder: string;
  /** e.g. `murmur:hook` */
  name: string;
  version: string;
  interfaces: string[];
  worlds: string[];
}

const PACKAGE_RE = /^\s*package\s+([a-z0-9-]+:[a-z0-9-]+)@([0-9][^;\s]*)\s*;/m;
const INTERFACE_RE = /^\s*interface\s+%?([a-z0-9-]+)\s*\{/gm;
const WORLD_RE = /^\s*world\s+%?([a-z0-9-]+)\s*\{/gm;

/** Reads every package folder under wit/ (a light textual scan; real parsing is in the tests). */
export function listWitPackages(root = WIT_ROOT): WitPackage[] {
  const out: WitPackage[] = [];
  for (const folder of readdirSync(root, { withFileTypes: true })) {
    if (!folder.isDirectory()) continue;
    const files = readdirSync(join(root, folder.name)).filter((f) => f.endsWith('.wit'));
    let name = '';
    let version = '';
    const interfaces: string[] = [];
    const worlds: string[] = [];
    for (const f of files) {
      const text = readFileSync(join(root, folder.name, f), 'utf8');
      const m = PACKAGE_RE.exec(text);
      if (!m) throw new Error(`wit/${folder.name}/${f}: no package declaration`);
      if (name && (name !== m[1] || version !== m[2])) {
        throw new Error(`wit/${folder.name}/${f}: package ${m[1]}@${m[2]} differs from ${name}@${version} in the same folder`);
      }
      name = m[1]!;
      version = m[2]!;
      for (const i of text.matchAll(INTERFACE_RE)) interfaces.push(i[1]!);
      for (const w of text.matchAll(WORLD_RE)) worlds.push(w[1]!);
    }
    out.push({ folder: folder.name, name, version, interfaces, worlds });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Lays out `<cacheDir>/<folder>-<hash>/` = the root package's .wit files + deps/<folder>/ links to
 * every other package, and returns its path. `extraDirs` are further root-level .wit files (for
 * example a fixture's own world) that are copied next to the root package.
 */
export function witDirFor(rootFolder: string, opts: { cacheDir?: string; extraWit?: string; wasiDir?: string } = {}): string {
  const cacheDir = opts.cacheDir ?? join(PROJECT_ROOT, '.cache', 'wit');
  const pkgs = listWitPackages();
  const hash = createHash('sha256');
  for (const p of pkgs) {
    for (const f of readdirSync(join(WIT_ROOT, p.folder)).sort()) hash.update(`${p.folder}/${f}`).update(readFileSync(join(WIT_ROOT, p.folder, f)));
  }
  if (opts.extraWit) hash.update(opts.extraWit);
  if (opts.wasiDir) hash.update(opts.wasiDir);
  const dir = join(cacheDir, `${rootFolder}-${hash.digest('hex').slice(0, 16)}`);
  if (existsSync(join(dir, '.complete'))) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'deps'), { recursive: true });
  // With extra WIT (a fixture's own world package), that package is the root and every project
  // package is a dependency; otherwise the named project package is the root.
  if (opts.extraWit) {
    writeFileSync(join(dir, 'extra.wit'), opts.extraWit);
  } else {
    for (const f of readdirSync(join(WIT_ROOT, rootFolder))) {
      writeFileSync(join(dir, f), readFileSync(join(WIT_ROOT, rootFolder, f)));
    }
  }
  for (const p of pkgs) {
    if (!opts.extraWit && p.folder === rootFolder) continue;
    // Copies, not symlinks: jco's WASI filesystem does not follow symlinks out of a directory.
    mkdirSync(join(dir, 'deps', p.folder));
    for (const f of readdirSync(join(WIT_ROOT, p.folder))) writeFileSync(join(dir, 'deps', p.folder, f), readFileSync(join(WIT_ROOT, p.folder, f)));
  }
  if (opts.wasiDir) {
    for (const p of readdirSync(opts.wasiDir)) {
      mkdirSync(join(dir, 'deps', p));
      for (const f of readdirSync(join(opts.wasiDir, p))) writeFileSync(join(dir, 'deps', p, f), readFileSync(join(opts.wasiDir, p, f)));
    }
  }
  writeFileSync(join(dir, '.complete'), '');
  return dir;
}
