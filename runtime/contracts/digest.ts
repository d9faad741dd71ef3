/**
 * Artifact digest: SHA-256 over the artifact's files in `sha256sum` form, sorted by file name:
 *
 *   sha256( "<sha256 of file>  <file name>\n" for each file, sorted by name )
 *
 * so `sha256sum murmur.yaml <name>.wasm | LC_ALL=C sort -k2 | sha256sum` reproduces it. It covers
 * the component AND its manifest (a hook's contract cannot be swapped under a pinned hash).
 */
import { createHash } from 'node:crypto';

export interface ArtifactFile {
  /** File name inside the artifact directory (no directories). */
  name: string;
  bytes: Uint8Array;
}

export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Per-file hashes, keyed by file name. */
export function fileHashes(files: readonly ArtifactFile[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of [...files].sort((a, b) => cmp(a.name, b.name))) out[f.name] = sha256Hex(f.bytes);
  return out;
}

export function digestOfHashes(hashes: Record<string, string>): string {
  const lines = Object.keys(hashes)
    .sort(cmp)
    .map((n) => `${hashes[n]}  ${n}\n`)
    .join('');
  return sha256Hex(lines);
}

export function artifactDigest(files: readonly ArtifactFile[]): string {
  return digestOfHashes(fileHashes(files));
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
