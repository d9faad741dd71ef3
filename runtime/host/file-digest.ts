/**
 * Which file a component path is (its identity), and the SHA-256 this process already computed for
 * that file as it is now, so a start reads and hashes each component file once.
 *
 * Why: `mur serve`/`mur run` hash every component that has no pin (hooks, a script capsule's own
 * `capsule.wasm`) in transpileAhead, and then again when it loads (loadComponent; a script
 * capsule's finder too), right after — a built-in-driver-sized file is ≈ 25 ms of CPU a pass.
 * The digest computed first is kept under the file's identity and served to the later ones.
 *
 * The trust argument is the pinned fast path's (transpile-cache.ts, loadComponent): a file is
 * taken to hold the bytes a digest was computed from while its device, inode, size, mtime AND
 * ctime are all unchanged to the nanosecond. The ctime is what makes it sound: any write to the
 * file or its metadata sets it to the current time and no unprivileged call sets it back (utimes
 * puts back mtime only), so a file rewritten at the same size with its mtime put back still shows
 * another identity and is hashed again. The identity is taken before the read and compared after
 * it: a file that changed while it was read is not remembered. What a remembered digest serves is
 * a cache entry (transpiled from bytes that hashed to its name) or a pin check; a load that has to
 * transpile reads the bytes and hashes them again, so the bytes sent to the transpiler always
 * match the digest they are cached under.
 */
import { readFileSync, statSync } from 'node:fs';
import { sha256Hex } from '../contracts/digest.ts';

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

const same = (a: FileIdentity, b: FileIdentity): boolean =>
  a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;

/** Whether `path` is still the file `id` was taken of (the header says why that is enough). */
export function sameFile(path: string, id: FileIdentity): boolean {
  try {
    return same(fileIdentity(path), id);
  } catch {
    return false;
  }
}

/** Files seen by this process: `dev:ino` → the identity the digest is for, and the digest. */
const known = new Map<string, { id: FileIdentity; sha256: string }>();
/** A capsule loads a handful of components; the bound only keeps a long-running process from collecting every file it ever loaded. */
const KNOWN_MAX = 256;
let hashes = 0;

const keyOf = (id: FileIdentity): string => `${id.dev}:${id.ino}`;

/** Remembers that the file of identity `id` holds bytes of digest `sha256` (lowercase hex). */
export function rememberDigest(id: FileIdentity, sha256: string): void {
  const key = keyOf(id);
  known.delete(key);
  known.set(key, { id, sha256 });
  if (known.size > KNOWN_MAX) known.delete(known.keys().next().value!);
}

/** The digest this process computed (or verified) for `path` as it is now, without reading it; else undefined. */
export function knownDigest(path: string): string | undefined {
  let id: FileIdentity;
  try {
    id = fileIdentity(path);
  } catch {
    return undefined;
  }
  const k = known.get(keyOf(id));
  return k && same(k.id, id) ? k.sha256 : undefined;
}

/** Reads and hashes `path` (throwing what readFileSync throws), and remembers the digest when the file did not change meanwhile. */
export function readDigested(path: string): { bytes: Uint8Array; sha256: string } {
  let before: FileIdentity | undefined;
  try {
    before = fileIdentity(path);
  } catch {
    // readFileSync below says what is wrong with the path.
  }
  const bytes = readFileSync(path);
  const sha256 = sha256Hex(bytes);
  hashes++;
  if (before && sameFile(path, before)) rememberDigest(before, sha256);
  return { bytes, sha256 };
}

/** The SHA-256 of the file at `path`: the one this process knows for it as it is now, else read and hashed. */
export function fileDigest(path: string): string {
  return knownDigest(path) ?? readDigested(path).sha256;
}

/** How many times this process read and hashed a component file (tests: once per start). */
export function componentFileHashes(): number {
  return hashes;
}
