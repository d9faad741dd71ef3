/**
 * Loads a component: verifies its SHA-256 (when a pin is given), transpiles it with jco ONCE (in a child process: transpile-child-run.ts) and
 * caches the JS glue + core modules on disk keyed by that hash, so every later load — in this
 * process or the next — skips the transpile (and the read and hash of the file when it is pinned and unchanged since, or this process
 * hashed it already: file-digest.ts). The cache entry is written to a temp folder and renamed
 * into place, so a crash or a concurrent loader never leaves half an entry.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { PROJECT_ROOT, seedCacheDirs } from '../wit/packages.ts';
import { ComponentLoadError, IntegrityError } from './errors.ts';
import { JCO_VERSION, type Meta } from './transpile-jco.ts';
import { GLUE_REVISION } from './glue-rewrite.ts';
import { transpileInChild } from './transpile-child-run.ts';
import { knownDigest, readDigested, rememberDigest, sameFile, type FileIdentity } from './file-digest.ts';

// Where the file identity lived first: staging and tests take it from here.
export { fileIdentity, type FileIdentity } from './file-digest.ts';

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
 * `sha256`: the digest the file must have (a pin), else IntegrityError before anything is
 * transpiled or run. `unchangedSince`: the file's identity when whoever pinned it had just
 * verified and written those bytes (staging: StagedArtifact.wasmIdentity).
 */
export async function loadComponent(
  path: string,
  opts: { sha256?: string; name?: string; cacheDir?: string; unchangedSince?: FileIdentity } = {},
): Promise<LoadedComponent> {
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
  const explicit = opts.cacheDir !== undefined;
  const unchanged = cachedUnchanged(name, path, pinned, opts.unchangedSince, cacheDir, explicit);
  if (unchanged) return unchanged;
  // A file this process already hashed (transpileAhead at start, a script capsule's finder) and
  // that is still the same file is not read again (file-digest.ts says why that is enough).
  const known = knownDigest(path);
  if (known !== undefined) {
    if (pinned && pinned !== known) throw new IntegrityError(name, opts.sha256!, known);
    const hit = cached(name, known, cacheDir, explicit);
    if (hit) return hit;
  }
  let bytes: Uint8Array;
  let sha: string;
  try {
    ({ bytes, sha256: sha } = readDigested(path));
  } catch (e) {
    throw new ComponentLoadError(name, `cannot read ${path}: ${(e as Error).message}`, 'check the artifact path', e);
  }
  if (pinned && pinned !== sha) {
    throw new IntegrityError(name, opts.sha256!, sha);
  }
  const hit = cached(name, sha, cacheDir, explicit);
  if (hit) return hit;
  const dir = cacheEntryDir(sha, cacheDir);
  const meta = await transpileInChild(name, bytes, dir);
  return {
    name,
    sha256: sha,
    dir,
    jsPath: join(dir, 'component.js'),
    coreFiles: meta.coreFiles,
    imports: meta.imports,
    exports: meta.exports,
    transpiled: true,
  };
}

/**
 * The cached transpile of a pinned file still as it was when its pin was verified (loadComponent
 * says why that is enough), found without reading or hashing the file; else undefined.
 */
export function cachedUnchanged(
  name: string,
  path: string,
  pinned: string | undefined,
  unchangedSince: FileIdentity | undefined,
  cacheDir: string,
  explicit: boolean,
): LoadedComponent | undefined {
  if (!pinned || !unchangedSince || !sameFile(path, unchangedSince)) return undefined;
  // The same trust, so the file's digest is known from here on (a later load without the identity).
  rememberDigest(unchangedSince, pinned);
  return cached(name, pinned, cacheDir, explicit);
}

/**
 * A cache entry's folder name, the same in the seeds and the writable cache: digest, jco version and
 * the revision of the runtime's rewrite of jco's glue (glue-rewrite.ts), so an entry another
 * revision wrote is never served.
 */
const entryName = (sha: string): string => `${sha}-jco${JCO_VERSION}-${GLUE_REVISION}`;

/** The writable cache's entry folder of the component with digest `sha`. */
export function cacheEntryDir(sha: string, cacheDir: string): string {
  return join(cacheDir, entryName(sha));
}

/**
 * The cached transpile of the component with digest `sha`: the seeds first, then `cacheDir`.
 * `explicit`: the caller named `cacheDir` (then the seeds are not consulted).
 */
export function cached(name: string, sha: string, cacheDir: string, explicit: boolean): LoadedComponent | undefined {
  const entry = entryName(sha);
  // An explicit cacheDir (tests, benches) means exactly that cache; the seeds serve the default.
  // Seeds (`MURMUR_COMPONENT_CACHE_SEED`): the runtime image carries its built-in components
  // already transpiled (made at image build time by the image's own runtime), so a pod's start
  // never transpiles them (≈ 1–2 s of main-thread CPU for a 12 MB SpiderMonkey component). An
  // entry is keyed by the component's verified SHA-256 and the jco version, like the writable
  // cache's, so a seed made by another jco or for other bytes is simply never found.
  for (const d of [...(explicit ? [] : seedCacheDirs().map((s) => join(s, entry))), join(cacheDir, entry)]) {
    const metaPath = join(d, 'meta.json');
    if (existsSync(metaPath)) {
      const meta = JSON.parse(readFileSync(metaPath, 'utf8')) as Meta;
      return {
        name,
        sha256: sha,
        dir: d,
        jsPath: join(d, 'component.js'),
        coreFiles: meta.coreFiles,
        imports: meta.imports,
        exports: meta.exports,
        transpiled: false,
      };
    }
  }
  return undefined;
}
