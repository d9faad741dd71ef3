/**
 * Loads a component: verifies its SHA-256 (when a pin is given), transpiles it with jco ONCE and
 * caches the JS glue + core modules on disk keyed by that hash, so every later load — in this
 * process or the next — skips the transpile (and, when pinned, the read and hash of the file). The cache entry is written to a temp folder and renamed
 * into place, so a crash or a concurrent loader never leaves half an entry.
 */
import { sha256Hex } from '../contracts/digest.ts';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROJECT_ROOT } from '../wit/packages.ts';
import { ComponentLoadError, IntegrityError } from './errors.ts';

export interface LoadedComponent {
  /** Display name (file name without .wasm unless given). */
  name: string;
  sha256: string;
  /** Folder holding the transpiled glue and core modules. */
  dir: string;
  /** The ESM glue exporting `instantiate`. */
  jsPath: string;
  /** Core module file names the glue asks for, in its folder. */
  coreFiles: string[];
  /** Interfaces the component imports, unversioned (`wasi:cli/stdout`, `murmur:task/task`). */
  imports: string[];
  /** Export names as jco exposes them (`run`, `lifecycle`, …). */
  exports: string[];
  /** Whether this load ran the transpiler (false = served from the cache). */
  transpiled: boolean;
}

export function defaultCacheDir(): string {
  return process.env.MURMUR_COMPONENT_CACHE ?? join(PROJECT_ROOT, '.cache', 'components');
}

/**
 * Read-only caches consulted before the writable one (`MURMUR_COMPONENT_CACHE_SEED`, a
 * `:`-separated list): the runtime image carries its built-in components already transpiled
 * (made at image build time by the image's own runtime), so a pod's start never transpiles them
 * (≈ 1–2 s of main-thread CPU for a 12 MB SpiderMonkey component). An entry is keyed by the
 * component's verified SHA-256 and the jco version, like the writable cache's, so a seed made by
 * another jco or for other bytes is simply never found.
 */
export function seedCacheDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.MURMUR_COMPONENT_CACHE_SEED ?? '').split(':').filter((d) => d !== '');
}

// Resolved from this module, not from PROJECT_ROOT: compiled to dist/, PROJECT_ROOT is dist/ and
// has no node_modules beside it (the runtime image), and the version would read 'unknown'.
const JCO_VERSION = (() => {
  try {
    const api = fileURLToPath(import.meta.resolve('@bytecodealliance/jco')); // <pkg>/dist/api.js
    return (JSON.parse(readFileSync(join(dirname(api), '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
})();

interface Meta {
  imports: string[];
  exports: string[];
  coreFiles: string[];
  jco: string;
}

/**
 * Which file, as `fs.statSync(path, { bigint: true })` saw it: device, inode, size and the change
 * and modification times in nanoseconds.
 */
export interface FileIdentity {
  dev: bigint;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

export function fileIdentity(path: string): FileIdentity {
  const st = statSync(path, { bigint: true });
  return { dev: st.dev, ino: st.ino, size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs };
}

function sameFile(path: string, id: FileIdentity): boolean {
  try {
    const now = fileIdentity(path);
    return now.dev === id.dev && now.ino === id.ino && now.size === id.size && now.mtimeNs === id.mtimeNs && now.ctimeNs === id.ctimeNs;
  } catch {
    return false;
  }
}

/**
 * `sha256`: the digest the file must have (a pin), else IntegrityError before anything is
 * transpiled or run. `unchangedSince`: the file's identity when whoever pinned it had just
 * verified and written those bytes (staging: StagedArtifact.wasmIdentity).
 */
export async function loadComponent(path: string, opts: { sha256?: string; name?: string; cacheDir?: string; unchangedSince?: FileIdentity } = {}): Promise<LoadedComponent> {
  const name = opts.name ?? basename(path).replace(/\.wasm$/, '');
  const pinned = opts.sha256?.toLowerCase().replace(/^sha256:/, '');
  const cacheDir = opts.cacheDir ?? defaultCacheDir();
  // A pinned file still as it was when its pin was verified, whose transpile is cached, is served
  // without reading or hashing it again (a built-in driver: 12 MB, ≈ 25 ms of CPU at every pod
  // start, right after staging hashed the same bytes). "As it was": same device and inode (not
  // replaced), same size, same mtime and ctime to the nanosecond. Any write to the file or its
  // metadata sets its ctime to the current time, and no unprivileged call can set a ctime back
  // (utimes sets mtime and atime only; ctime becomes now), so a file changed after staging shows
  // another identity, is read and hashed below, and a mismatch is refused. The cache entry itself
  // was written by transpileInto from bytes that hashed to its name.
  if (pinned && opts.unchangedSince && sameFile(path, opts.unchangedSince)) {
    const hit = cached(name, pinned, cacheDir, opts.cacheDir !== undefined);
    if (hit) return hit;
  }
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    throw new ComponentLoadError(name, `cannot read ${path}: ${(e as Error).message}`, 'check the artifact path', e);
  }
  const sha = sha256Hex(bytes);
  if (pinned && pinned !== sha) {
    throw new IntegrityError(name, opts.sha256!, sha);
  }
  const hit = cached(name, sha, cacheDir, opts.cacheDir !== undefined);
  if (hit) return hit;
  const dir = join(cacheDir, `${sha}-jco${JCO_VERSION}`);
  const meta = await transpileInto(name, bytes, dir);
  return { name, sha256: sha, dir, jsPath: join(dir, 'component.js'), coreFiles: meta.coreFiles, imports: meta.imports, exports: meta.exports, transpiled: true };
}

/** The cached transpile of the component with digest `sha`: the seeds first, then `cacheDir`. */
function cached(name: string, sha: string, cacheDir: string, explicit: boolean): LoadedComponent | undefined {
  const entry = `${sha}-jco${JCO_VERSION}`;
  // An explicit cacheDir (tests, benches) means exactly that cache; the seeds serve the default.
  for (const d of [...(explicit ? [] : seedCacheDirs().map((s) => join(s, entry))), join(cacheDir, entry)]) {
    const metaPath = join(d, 'meta.json');
    if (existsSync(metaPath)) {
      const meta = JSON.parse(readFileSync(metaPath, 'utf8')) as Meta;
      return { name, sha256: sha, dir: d, jsPath: join(d, 'component.js'), coreFiles: meta.coreFiles, imports: meta.imports, exports: meta.exports, transpiled: false };
    }
  }
  return undefined;
}

async function transpileInto(name: string, bytes: Uint8Array, dir: string): Promise<Meta> {
  const { transpile } = await import('@bytecodealliance/jco');
  let out: { files: Record<string, Uint8Array>; imports: string[]; exports: [string, string][] };
  try {
    out = (await transpile(bytes, {
      name: 'component',
      instantiation: 'async',
      // `hybrid` skips jco's per-call `process.env.JCO_DEBUG` read (35 % of a trivial call).
      importBindings: 'hybrid',
      noTypescript: true,
      quiet: true,
    })) as unknown as typeof out;
  } catch (e) {
    throw new ComponentLoadError(name, `is not a loadable WebAssembly component: ${(e as Error).message}`,
      'build it for wasm32-wasip2 / the component model (a core module is not enough)', e);
  }
  const tmp = `${dir}.tmp-${process.pid}-${Date.now()}`;
  mkdirSync(tmp, { recursive: true });
  const coreFiles: string[] = [];
  for (const [file, content] of Object.entries(out.files)) {
    let data = content;
    if (file.endsWith('.js')) {
      // Belt and braces for the non-hybrid paths of the glue.
      data = Buffer.from(Buffer.from(content).toString('utf8').replaceAll('if (!globalThis?.process?.env?.JCO_DEBUG) { return; }', 'return;'));
    }
    if (file.endsWith('.wasm')) coreFiles.push(file);
    mkdirSync(join(tmp, file, '..'), { recursive: true });
    writeFileSync(join(tmp, file), data);
  }
  // The glue is ESM; make sure Node reads it as such wherever the cache lives.
  writeFileSync(join(tmp, 'package.json'), '{"type":"module"}');
  const meta: Meta = {
    imports: out.imports.map((i) => i.replace(/@[^/]*$/, '')),
    exports: out.exports.map(([n]) => n),
    coreFiles: coreFiles.sort(),
    jco: JCO_VERSION,
  };
  writeFileSync(join(tmp, 'meta.json'), JSON.stringify(meta, null, 2));
  try {
    renameSync(tmp, dir);
  } catch {
    // Another loader won the race; its entry is identical.
    rmSync(tmp, { recursive: true, force: true });
  }
  return meta;
}
