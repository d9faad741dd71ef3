/**
 * The local registry: a directory of published artifacts.
 *
 *   <registry>/<name>/<version>/murmur.yaml     the artifact manifest
 *   <registry>/<name>/<version>/<name>.wasm     the component (skills: skill.md instead)
 *   <registry>/<name>/<version>/artifact.json   {format, name, version, runtime, sha256, files}
 *
 * `artifact.json.sha256` is the artifact digest (digest.ts) over the other files; `files` maps each
 * file name to its own SHA-256. Resolution reads the files, recomputes both, and refuses on any
 * difference. See docs/registry.md.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { MurError } from '../errors.ts';
import { parseArtifactManifest, type ArtifactManifest } from '../manifest/artifact.ts';
import { RESERVED_VERSIONS } from '../manifest/checks.ts';
import type { ArtifactRuntime } from '../manifest/schema.ts';
import { artifactDigest, digestOfHashes, fileHashes, type ArtifactFile } from '../contracts/digest.ts';
import { componentHeader } from './component-check.ts';

export const RECORD_FILE = 'artifact.json';
export const ARTIFACT_MANIFEST = 'murmur.yaml';
export const SKILL_FILE = 'skill.md';
export const RECORD_FORMAT = 1;

export interface ArtifactRecord {
  format: number;
  name: string;
  version: string;
  runtime: ArtifactRuntime;
  /** Artifact digest over `files`. */
  sha256: string;
  /** SHA-256 of each file, by file name. */
  files: Record<string, string>;
  /** SHA-256 of the `.mur.zip` package it was installed from (the reference runtime's lock hash). */
  package_sha256?: string;
}

/** An artifact whose bytes are in memory and verified. */
export interface VerifiedArtifact {
  name: string;
  version: string;
  runtime: ArtifactRuntime;
  sha256: string;
  manifest: ArtifactManifest;
  /** Every file (murmur.yaml and the payload), verified. */
  files: ArtifactFile[];
  /** Each file's SHA-256 as verified against the record (the payload's pins its load: loadComponent). */
  fileSha256: Record<string, string>;
  /** Payload file name: `<name>.wasm`, or `skill.md` for skills. */
  payload: string;
  /** Where it was read from (a registry version dir or a remote-cache dir). */
  dir: string;
  /** SHA-256 of the `.mur.zip` it was installed from, when it was. */
  packageSha256?: string;
}

export function payloadName(name: string, runtime: ArtifactRuntime): string {
  return runtime === 'skill' ? SKILL_FILE : `${name}.wasm`;
}

export function versionDir(registryDir: string, name: string, version: string): string {
  return path.join(path.resolve(registryDir), name, version);
}

/** Versions published for `name`, sorted. */
export function listVersions(registryDir: string, name: string): string[] {
  try {
    return readdirSync(path.join(registryDir, name))
      .filter((v) => existsSync(path.join(registryDir, name, v, RECORD_FILE)))
      .sort();
  } catch {
    return [];
  }
}

/** Every published artifact as {name, version, runtime}. */
export function listRegistry(registryDir: string): { name: string; version: string; runtime: ArtifactRuntime }[] {
  const out: { name: string; version: string; runtime: ArtifactRuntime }[] = [];
  let names: string[] = [];
  try {
    names = readdirSync(registryDir)
      .filter((n) => !n.startsWith('.'))
      .sort();
  } catch {
    return out;
  }
  for (const name of names) {
    for (const version of listVersions(registryDir, name)) {
      try {
        const rec = JSON.parse(readFileSync(path.join(registryDir, name, version, RECORD_FILE), 'utf8')) as ArtifactRecord;
        out.push({ name, version, runtime: rec.runtime });
      } catch {
        /* corrupt entries are reported on resolve */
      }
    }
  }
  return out;
}

function corrupt(dir: string, what: string, cause?: unknown): MurError {
  return new MurError('E-REG-006', `corrupt registry entry ${dir}: ${what}`, {
    hint: 'republish the artifact (publish(registryDir, artifactDir)) or restore the directory from a good copy',
    location: { file: path.join(dir, RECORD_FILE) },
    cause,
  });
}

/**
 * Reads and verifies the artifact stored in `dir` (a registry version dir or a remote-cache dir):
 * artifact.json, each file's hash, the digest, and the artifact manifest (with its hook contract).
 * Reads only; writes nothing.
 */
export function readVerifiedDir(dir: string): VerifiedArtifact {
  const recFile = path.join(dir, RECORD_FILE);
  let rec: ArtifactRecord;
  try {
    rec = JSON.parse(readFileSync(recFile, 'utf8')) as ArtifactRecord;
  } catch (e) {
    throw corrupt(dir, `cannot read ${RECORD_FILE} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, e);
  }
  if (
    rec?.format !== RECORD_FORMAT ||
    typeof rec.name !== 'string' ||
    typeof rec.version !== 'string' ||
    typeof rec.sha256 !== 'string' ||
    typeof rec.files !== 'object' ||
    rec.files === null
  ) {
    throw corrupt(dir, `${RECORD_FILE} is not a format-${RECORD_FORMAT} record`);
  }
  const onDisk = readdirSync(dir)
    .filter((f) => f !== RECORD_FILE && !f.startsWith('.'))
    .sort();
  const listed = Object.keys(rec.files).sort();
  if (onDisk.join('\0') !== listed.join('\0')) {
    throw new MurError('E-REG-002', `registry entry ${dir} holds files [${onDisk.join(', ')}] but ${RECORD_FILE} lists [${listed.join(', ')}]`, {
      hint: 'the entry was modified after publishing; republish the artifact or restore the directory',
      location: { file: recFile },
    });
  }
  const files: ArtifactFile[] = listed.map((n) => ({ name: n, bytes: readFileSync(path.join(dir, n)) }));
  const actual = fileHashes(files);
  for (const n of listed) {
    if (actual[n] !== rec.files[n]) {
      throw new MurError('E-REG-002', `sha256 mismatch for ${rec.name} ${rec.version}: ${n} hashes to ${actual[n]} but the registry records ${rec.files[n]}`, {
        hint: 'the artifact bytes changed after publishing; republish it, or restore the original file',
        location: { file: path.join(dir, n) },
      });
    }
  }
  // From the per-file hashes just checked: hashing the files again (12 MB for a driver) would
  // double the cost of every stage.
  const digest = digestOfHashes(actual);
  if (digest !== rec.sha256) {
    throw new MurError('E-REG-002', `sha256 mismatch for ${rec.name} ${rec.version}: the files digest to ${digest} but the registry records ${rec.sha256}`, {
      hint: 'artifact.json was edited; republish the artifact',
      location: { file: recFile, field: 'sha256' },
    });
  }
  const mf = files.find((f) => f.name === ARTIFACT_MANIFEST);
  if (!mf) throw corrupt(dir, `no ${ARTIFACT_MANIFEST}`);
  const manifest = parseArtifactManifest(Buffer.from(mf.bytes).toString('utf8'), path.join(dir, ARTIFACT_MANIFEST));
  if (manifest.name !== rec.name || manifest.version !== rec.version || manifest.runtime !== rec.runtime) {
    throw corrupt(
      dir,
      `${ARTIFACT_MANIFEST} says ${manifest.name} ${manifest.version} (${manifest.runtime}) but ${RECORD_FILE} says ${rec.name} ${rec.version} (${rec.runtime})`,
    );
  }
  const payload = payloadName(rec.name, rec.runtime);
  if (!files.some((f) => f.name === payload)) throw corrupt(dir, `missing payload ${payload}`);
  return {
    name: rec.name,
    version: rec.version,
    runtime: rec.runtime,
    sha256: rec.sha256,
    manifest,
    files,
    fileSha256: actual,
    payload,
    dir,
    ...(rec.package_sha256 ? { packageSha256: rec.package_sha256 } : {}),
  };
}

/** Locates `name@version` in the registry (E-REG-001 when absent) and verifies it. */
export function resolveFromRegistry(registryDir: string, name: string, version: string): VerifiedArtifact {
  const dir = versionDir(registryDir, name, version);
  if (!existsSync(path.join(dir, RECORD_FILE))) {
    const have = listVersions(registryDir, name);
    throw new MurError('E-REG-001', `artifact '${name}' version '${version}' is not in the registry ${path.resolve(registryDir)}`, {
      hint: have.length
        ? `published versions of '${name}': ${have.join(', ')}; set one in murmur.yaml`
        : `publish it first (publish(registryDir, artifactDir)), or check the name and the registry directory`,
      location: { file: dir },
    });
  }
  return readVerifiedDir(dir);
}

/**
 * Writes a verified set of files as a registry-layout directory `dir` (atomic: temp dir + rename).
 * Used by publish and the remote cache.
 */
export function writeArtifactDir(
  dir: string,
  a: { name: string; version: string; runtime: ArtifactRuntime; files: readonly ArtifactFile[]; packageSha256?: string },
): ArtifactRecord {
  const rec: ArtifactRecord = {
    format: RECORD_FORMAT,
    name: a.name,
    version: a.version,
    runtime: a.runtime,
    sha256: artifactDigest(a.files),
    files: fileHashes(a.files),
    ...(a.packageSha256 ? { package_sha256: a.packageSha256 } : {}),
  };
  mkdirSync(path.dirname(dir), { recursive: true });
  const tmp = path.join(path.dirname(dir), `.tmp-${path.basename(dir)}-${randomBytes(4).toString('hex')}`);
  mkdirSync(tmp);
  try {
    for (const f of a.files) writeFileSync(path.join(tmp, f.name), f.bytes);
    writeFileSync(path.join(tmp, RECORD_FILE), `${JSON.stringify(rec, null, 2)}\n`);
    renameSync(tmp, dir);
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  return rec;
}

/** Picks the component of an artifact directory: `component.wasm`, `<name>.wasm`, or the only root `*.wasm`. */
function findComponent(artifactDir: string, name: string): string {
  const wasm = readdirSync(artifactDir).filter((f) => f.endsWith('.wasm') && statSync(path.join(artifactDir, f)).isFile());
  for (const pref of ['component.wasm', `${name}.wasm`]) if (wasm.includes(pref)) return pref;
  if (wasm.length === 1) return wasm[0]!;
  throw new MurError(
    'E-REG-012',
    wasm.length === 0
      ? `no .wasm component in ${artifactDir}`
      : `several .wasm files in ${artifactDir} (${wasm.join(', ')}) and none is component.wasm or ${name}.wasm`,
    {
      hint: `put the component in ${artifactDir} as component.wasm (or ${name}.wasm)`,
      location: { file: artifactDir },
    },
  );
}

export interface PublishResult {
  name: string;
  version: string;
  runtime: ArtifactRuntime;
  sha256: string;
  dir: string;
}

/**
 * Publishes `artifactDir` (its murmur.yaml plus its component, or skill.md for skills) into the
 * registry as `<name>/<version>/`. Refuses reserved versions (E-REG-005) and republishing a version
 * with different content (E-REG-012); republishing identical content is a no-op.
 */
export function publish(registryDir: string, artifactDir: string): PublishResult {
  const mfPath = path.join(artifactDir, ARTIFACT_MANIFEST);
  let mfBytes: Buffer;
  try {
    mfBytes = readFileSync(mfPath);
  } catch (e) {
    throw new MurError('E-REG-012', `cannot publish ${artifactDir}: no ${ARTIFACT_MANIFEST}`, {
      hint: 'an artifact directory holds murmur.yaml (name, version, runtime) next to its component',
      location: { file: mfPath },
      cause: e,
    });
  }
  const manifest = parseArtifactManifest(mfBytes.toString('utf8'), mfPath);
  const srcPayload = manifest.runtime === 'skill' ? SKILL_FILE : findComponent(artifactDir, manifest.name);
  let payloadBytes: Buffer;
  try {
    payloadBytes = readFileSync(path.join(artifactDir, srcPayload));
  } catch (e) {
    throw new MurError('E-REG-012', `cannot publish ${artifactDir}: no ${srcPayload}`, {
      hint: manifest.runtime === 'skill' ? 'a skill artifact holds skill.md' : 'build the component first',
      location: { file: path.join(artifactDir, srcPayload) },
      cause: e,
    });
  }
  return publishFiles(registryDir, manifest, mfBytes, payloadBytes, mfPath, undefined, path.join(artifactDir, srcPayload));
}

/**
 * Publishes a parsed manifest and its payload (the component, or skill.md) as `<name>/<version>/`.
 * A payload that is not a WebAssembly component is refused here (E-PKG-001), not at run time.
 */
export function publishFiles(
  registryDir: string,
  manifest: ArtifactManifest,
  mfBytes: Uint8Array,
  payloadBytes: Uint8Array,
  mfPath: string,
  packageSha256?: string,
  payloadFile = mfPath,
): PublishResult {
  if ((RESERVED_VERSIONS as readonly string[]).includes(manifest.version)) {
    throw new MurError('E-REG-005', `version '${manifest.version}' is reserved and cannot be published`, {
      hint: "publish an exact version such as '1.0.0'",
      location: { file: mfPath, field: 'version' },
    });
  }
  if (manifest.runtime !== 'skill') componentHeader(payloadBytes, payloadFile);
  const payload = payloadName(manifest.name, manifest.runtime);
  const files: ArtifactFile[] = [
    { name: ARTIFACT_MANIFEST, bytes: mfBytes },
    { name: payload, bytes: payloadBytes },
  ];
  const dir = versionDir(registryDir, manifest.name, manifest.version);
  const digest = artifactDigest(files);
  if (existsSync(dir)) {
    const existing = readVerifiedDir(dir);
    if (existing.sha256 === digest) return { name: manifest.name, version: manifest.version, runtime: manifest.runtime, sha256: digest, dir };
    throw new MurError('E-REG-012', `${manifest.name} ${manifest.version} is already published with different content (sha256 ${existing.sha256})`, {
      hint: "bump the version in the artifact's murmur.yaml; a published version never changes",
      location: { file: mfPath, field: 'version' },
    });
  }
  const rec = writeArtifactDir(dir, {
    name: manifest.name,
    version: manifest.version,
    runtime: manifest.runtime,
    files,
    ...(packageSha256 ? { packageSha256 } : {}),
  });
  return { name: rec.name, version: rec.version, runtime: rec.runtime, sha256: rec.sha256, dir };
}
