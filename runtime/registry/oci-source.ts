/**
 * `source: {oci: "<registry>/<repo>:<tag>@sha256:<hex>"}` on a capsule entry: the Wasm OCI artifact
 * is pulled (runtime/registry/oci.ts, manifest and layer verified against their digests), its
 * component checked to be a component, and cached in registry layout under
 * `<cacheDir>/oci-<manifest hex>/<name>/` — from then on verified from disk like any artifact, with
 * no request made. Its manifest is derived from the capsule entry (an OCI artifact carries only the
 * component), as for a bare remote component.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { MurError } from '../errors.ts';
import type { ArtifactEntry } from '../manifest/capsule.ts';
import { componentHeader } from './component-check.ts';
import { parseOciRef } from './oci-ref.ts';
import { readVerifiedDir, writeArtifactDir, type VerifiedArtifact } from './registry.ts';
import { remoteCacheDir, unpackRemote } from './remote.ts';

export function ociCacheDir(cacheDir: string, entry: ArtifactEntry): string {
  const ref = parseOciRef(entry.oci!)!;
  return remoteCacheDir(cacheDir, `oci-${ref.digest!.slice('sha256:'.length)}`, entry);
}

/** What murmur.lock records for an OCI artifact: the reference and the manifest digest. */
export function ociLockSource(entry: ArtifactEntry): { url: string; sha256: string } {
  const ref = parseOciRef(entry.oci!)!;
  return { url: `oci://${entry.oci}`, sha256: ref.digest!.slice('sha256:'.length) };
}

/**
 * In a pod the operator mounts the artifact as an image volume at `$MURMUR_OCI_MOUNT_DIR/<name>/`
 * (the kubelet pulled it by digest with the cluster's pull secrets and verified it): the component
 * is read from there, and no registry request is made.
 */
function fromMount(entry: ArtifactEntry): Uint8Array | undefined {
  const root = process.env.MURMUR_OCI_MOUNT_DIR;
  if (!root) return undefined;
  const dir = path.join(root, entry.name);
  if (!existsSync(dir)) return undefined;
  const wasm = readdirSync(dir).filter((f) => f.endsWith('.wasm'));
  if (wasm.length !== 1)
    throw new MurError('E-REG-016', `OCI artifact ${entry.oci} mounted at ${dir} holds ${wasm.length} .wasm files, not one`, {
      hint: 'push exactly one application/wasm layer with a title annotation (oras push ... component.wasm:application/wasm)',
    });
  return readFileSync(path.join(dir, wasm[0]!));
}

export async function resolveOci(entry: ArtifactEntry, cacheDir: string): Promise<VerifiedArtifact> {
  const ref = parseOciRef(entry.oci!);
  if (!ref?.digest) throw new MurError('E-MAN-025', `source.oci '${entry.oci}' is not pinned by digest`, { hint: 'append @sha256:<manifest digest>' });
  const dir = ociCacheDir(cacheDir, entry);
  if (!existsSync(dir)) {
    // The client (and the TLS stack it loads) only when a pull is needed: oci-ref.ts.
    const component = fromMount(entry) ?? (await (await import('./oci.ts')).pullWasm(ref)).component;
    componentHeader(component, `oci://${entry.oci}`);
    const u = unpackRemote(entry, `oci://${entry.oci}`, component);
    writeArtifactDir(dir, u);
  }
  try {
    return readVerifiedDir(dir);
  } catch (e) {
    if (e instanceof MurError && e.code === 'E-REG-002') {
      throw new MurError(e.code, `OCI cache entry for '${entry.name}': ${e.message}`, {
        hint: `the cached copy of ${entry.oci} was modified; delete ${dir} and stage again to pull it`,
        cause: e,
      });
    }
    throw e;
  }
}
