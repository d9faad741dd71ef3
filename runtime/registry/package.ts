/**
 * Package files: an artifact folder packed as one `.mur.zip` (murmur.yaml + the component, or
 * exactly the manifest's `requires_files`), the layout of the reference runtime's packages, so a
 * Murmur `.mur.zip` installs as it is and a package made here installs in Murmur.
 *
 * Zip reading and writing is fflate (well kept, no dependencies, synchronous). Entry names that are
 * absolute or climb out with `..` are ignored, and decompression is capped (500 MB, as the
 * reference's `MURMUR_MAX_ARTIFACT_DECOMPRESSED_BYTES`), so a hostile package cannot write outside
 * or exhaust memory.
 */
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readFileSync, readdirSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { unzipSync, zipSync } from 'fflate';
import { MurError } from '../errors.ts';
import { parseArtifactManifest, type ArtifactManifest } from '../manifest/artifact.ts';
import type { ArtifactRuntime } from '../manifest/schema.ts';
import { ARTIFACT_MANIFEST, SKILL_FILE, publishFiles, type PublishResult } from './registry.ts';
import { requireComponent } from './component-check.ts';

export const PACKAGE_SUFFIX = '.mur.zip';
const MAX_DECOMPRESSED = Number(process.env.MURMUR_MAX_ARTIFACT_DECOMPRESSED_BYTES ?? 500 * 1024 * 1024);

export interface PackageContent {
  manifest: ArtifactManifest;
  manifestBytes: Uint8Array;
  /** Payload file name inside the package and its bytes (the component, or skill.md). */
  payloadName: string;
  payload: Uint8Array;
  /** Every file of the package by name. */
  files: Map<string, Uint8Array>;
}

/** The component among `names`: component.wasm, <name>.wasm, or the only root *.wasm. */
export function pickComponent(names: readonly string[], name: string, where: string): string {
  const wasm = names.filter((f) => f.endsWith('.wasm') && !f.includes('/'));
  for (const pref of ['component.wasm', `${name}.wasm`]) if (wasm.includes(pref)) return pref;
  if (wasm.length === 1) return wasm[0]!;
  throw new MurError(
    'E-PKG-002',
    wasm.length === 0
      ? `no .wasm component at the root of ${where}`
      : `several .wasm files in ${where} (${wasm.join(', ')}) and none is component.wasm or ${name}.wasm`,
    {
      hint: `put the component at the root of ${where} as component.wasm (or ${name}.wasm), or list it in requires_files`,
      location: { file: where },
    },
  );
}

function payloadOf(m: ArtifactManifest, names: readonly string[], where: string): string {
  if (m.runtime === 'skill') {
    if (!names.includes(SKILL_FILE))
      throw new MurError('E-PKG-002', `skill '${m.name}' has no ${SKILL_FILE} in ${where}`, {
        hint: `write ${SKILL_FILE} next to murmur.yaml`,
        location: { file: where },
      });
    return SKILL_FILE;
  }
  return pickComponent(names, m.name, where);
}

/** Reads an artifact folder: its manifest, and exactly the files it packs (`requires_files`, else the component). */
export function readArtifactFolder(artifactDir: string): {
  manifest: ArtifactManifest;
  manifestBytes: Uint8Array;
  files: Map<string, Uint8Array>;
  payloadName: string;
} {
  const dir = path.resolve(artifactDir);
  const mfPath = path.join(dir, ARTIFACT_MANIFEST);
  if (!existsSync(mfPath)) {
    throw new MurError('E-PKG-001', `${dir} has no ${ARTIFACT_MANIFEST}`, {
      hint: 'an artifact folder holds murmur.yaml (name, version, runtime) next to its component',
      location: { file: mfPath },
    });
  }
  const manifestBytes = readFileSync(mfPath);
  const manifest = parseArtifactManifest(manifestBytes.toString('utf8'), mfPath);
  const files = new Map<string, Uint8Array>();
  const listed = manifest.requiresFiles ?? [];
  for (const [i, rel] of listed.entries()) {
    const p = path.join(dir, rel);
    const field = `requires_files[${i}]`;
    let st: Stats;
    try {
      st = lstatSync(p);
    } catch {
      throw new MurError('E-PKG-003', `${field} '${rel}' does not exist in ${dir}`, {
        hint: `create it, or remove it from requires_files`,
        location: { file: mfPath, field },
      });
    }
    if (st.isSymbolicLink() || !st.isFile()) {
      throw new MurError('E-PKG-003', `${field} '${rel}' is ${st.isSymbolicLink() ? 'a symlink' : 'not a regular file'}`, {
        hint: 'list regular files inside the artifact folder only (copy the target in place of a symlink)',
        location: { file: mfPath, field },
      });
    }
    if (rel === ARTIFACT_MANIFEST) continue;
    files.set(rel.split(path.sep).join('/'), readFileSync(p));
  }
  if (listed.length === 0) {
    const names = readdirSync(dir).filter((f) => statSync(path.join(dir, f)).isFile());
    const payloadName = payloadOf(manifest, names, dir);
    files.set(payloadName, readFileSync(path.join(dir, payloadName)));
    return { manifest, manifestBytes, files, payloadName };
  }
  return { manifest, manifestBytes, files, payloadName: payloadOf(manifest, [...files.keys()], `${dir} (requires_files)`) };
}

/**
 * `mur pack`: the artifact folder as a `.mur.zip` (murmur.yaml first, then the packed files), after
 * checking the component is one of the right world. Returns the bytes and their SHA-256.
 */
export async function packArtifact(artifactDir: string): Promise<{ manifest: ArtifactManifest; bytes: Uint8Array; sha256: string; fileName: string }> {
  const a = readArtifactFolder(artifactDir);
  if (a.manifest.runtime !== 'skill')
    await requireComponent(a.files.get(a.payloadName)!, a.manifest.runtime, path.join(path.resolve(artifactDir), a.payloadName), a.manifest.roleFromEntry);
  const entries: Record<string, Uint8Array> = { [ARTIFACT_MANIFEST]: a.manifestBytes };
  for (const [n, b] of a.files) entries[n] = b;
  // A fixed timestamp: the same folder always packs to the same bytes (and the same sha256).
  const bytes = zipSync(entries, { level: 9, mtime: new Date('2000-01-01T00:00:00Z') });
  return { manifest: a.manifest, bytes, sha256: sha256(bytes), fileName: `${a.manifest.name}-${a.manifest.version}${PACKAGE_SUFFIX}` };
}

export function sha256(b: Uint8Array): string {
  return createHash('sha256').update(b).digest('hex');
}

/** Reads a `.mur.zip` (made here or by the reference runtime). */
export function readPackage(bytes: Uint8Array, file: string): PackageContent {
  let total = 0;
  let raw: Record<string, Uint8Array>;
  try {
    raw = unzipSync(bytes, {
      filter: (f) => {
        total += f.originalSize;
        if (total > MAX_DECOMPRESSED)
          throw new MurError('E-PKG-004', `${file} decompresses to more than ${MAX_DECOMPRESSED} bytes`, {
            hint: 'raise MURMUR_MAX_ARTIFACT_DECOMPRESSED_BYTES if the package is genuine',
            location: { file },
          });
        return !(f.name.startsWith('/') || f.name.split('/').includes('..') || f.name.endsWith('/'));
      },
    });
  } catch (e) {
    if (e instanceof MurError) throw e;
    throw new MurError('E-PKG-004', `${file} is not a readable .mur.zip package: ${(e as Error).message}`, {
      hint: "make the package with `mur pack <artifact-dir>` (or Murmur's `mur build`)",
      location: { file },
      cause: e,
    });
  }
  const files = new Map(Object.entries(raw));
  const manifestBytes = files.get(ARTIFACT_MANIFEST);
  if (!manifestBytes)
    throw new MurError('E-PKG-004', `${file} holds no ${ARTIFACT_MANIFEST} at its root`, {
      hint: 'a package holds murmur.yaml next to its component',
      location: { file },
    });
  const manifest = parseArtifactManifest(Buffer.from(manifestBytes).toString('utf8'), `${file}!/${ARTIFACT_MANIFEST}`);
  files.delete(ARTIFACT_MANIFEST);
  const payloadName = payloadOf(manifest, [...files.keys()], file);
  return { manifest, manifestBytes, payloadName, payload: files.get(payloadName)!, files };
}

/**
 * `mur install <file>.mur.zip`: verifies the package (a component of the right world) and publishes
 * it into `registryDir`, recording the package's SHA-256 (what a reference-runtime lock pins).
 */
export async function installPackage(registryDir: string, file: string): Promise<PublishResult & { packageSha256: string }> {
  const bytes = readFileSync(file);
  const p = readPackage(bytes, file);
  const runtime: ArtifactRuntime = p.manifest.runtime;
  if (runtime !== 'skill') await requireComponent(p.payload, runtime, `${file}!/${p.payloadName}`, p.manifest.roleFromEntry);
  const packageSha256 = sha256(bytes);
  const r = publishFiles(registryDir, p.manifest, p.manifestBytes, p.payload, `${file}!/${ARTIFACT_MANIFEST}`, packageSha256);
  return { ...r, packageSha256 };
}
