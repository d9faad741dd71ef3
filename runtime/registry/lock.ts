/**
 * `murmur.lock`: YAML beside the capsule's murmur.yaml, pinning every staged (and pulled) artifact
 * by name, version and digest. Sorted by name, written atomically (temp file + rename), stable
 * byte-for-byte for the same content.
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { MurError } from '../errors.ts';
import { SHA256_RE } from '../manifest/checks.ts';

export const LOCK_FILE = 'murmur.lock';
export const LOCK_VERSION = 1;

export interface LockEntry {
  name: string;
  version: string;
  /** Artifact digest (see digest.ts); '' for an entry in the reference runtime's format. */
  sha256: string;
  /**
   * An entry written by the reference runtime (Murmur): `resolved_version` and `sha256: {wasm}`,
   * the SHA-256 of the whole `.mur.zip` package. It is checked against the package hash recorded
   * when that package was installed (`mur install x.mur.zip`), and rendered back in its own format.
   */
  packageSha256?: string;
  /** Remote artifacts: where they came from and the pinned hash of the fetched bytes. */
  source?: { url: string; sha256: string };
}

export interface Lockfile {
  lockVersion: number;
  artifacts: LockEntry[];
}

export function lockPath(capsuleDir: string): string {
  return path.join(capsuleDir, LOCK_FILE);
}

function lockError(file: string, message: string, line?: number, field?: string): MurError {
  return new MurError('E-REG-010', `malformed ${LOCK_FILE}: ${message}`, {
    hint: `fix ${file} by hand, or delete it to re-pin every artifact on the next stage`,
    location: { file, ...(line !== undefined ? { line } : {}), ...(field ? { field } : {}) },
  });
}

/** Parses lock text. Throws E-REG-010 when malformed. */
export function parseLock(text: string, file: string): Lockfile {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, uniqueKeys: true });
  if (doc.errors.length > 0) throw lockError(file, doc.errors[0]!.message.split('\n')[0]!, lc.linePos(doc.errors[0]!.pos[0]).line);
  const v = doc.toJS() as unknown;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw lockError(file, 'not a mapping', 1);
  const o = v as Record<string, unknown>;
  if (o.lock_version !== LOCK_VERSION)
    throw lockError(file, `lock_version must be ${LOCK_VERSION}, found ${JSON.stringify(o.lock_version)}`, 1, 'lock_version');
  if (!Array.isArray(o.artifacts)) throw lockError(file, "'artifacts' must be a list", 1, 'artifacts');
  const out: LockEntry[] = [];
  o.artifacts.forEach((a: unknown, i) => {
    const field = `artifacts[${i}]`;
    if (typeof a !== 'object' || a === null) throw lockError(file, `${field} is not a mapping`, undefined, field);
    const e = a as Record<string, unknown>;
    // The reference runtime's entry: {name, resolved_version, sha256: {wasm: <hex>}}.
    if (e.resolved_version !== undefined || (typeof e.sha256 === 'object' && e.sha256 !== null)) {
      const rv = typeof e.resolved_version === 'number' ? String(e.resolved_version) : e.resolved_version;
      const wasm = (e.sha256 as Record<string, unknown> | undefined)?.wasm;
      if (typeof e.name !== 'string' || e.name === '') throw lockError(file, `${field}.name is missing`, undefined, `${field}.name`);
      if (typeof rv !== 'string' || rv === '') throw lockError(file, `${field}.resolved_version is missing`, undefined, `${field}.resolved_version`);
      if (typeof wasm !== 'string' || !SHA256_RE.test(wasm))
        throw lockError(file, `${field}.sha256.wasm is not 64 hex characters`, undefined, `${field}.sha256.wasm`);
      out.push({ name: e.name, version: rv, sha256: '', packageSha256: wasm });
      return;
    }
    const version = typeof e.version === 'number' ? String(e.version) : e.version;
    if (typeof e.name !== 'string' || e.name === '') throw lockError(file, `${field}.name is missing`, undefined, `${field}.name`);
    if (typeof version !== 'string' || version === '') throw lockError(file, `${field}.version is missing`, undefined, `${field}.version`);
    if (typeof e.sha256 !== 'string' || !SHA256_RE.test(e.sha256))
      throw lockError(file, `${field}.sha256 is not 64 hex characters`, undefined, `${field}.sha256`);
    const entry: LockEntry = { name: e.name, version, sha256: e.sha256 };
    if (typeof e.package_sha256 === 'string' && SHA256_RE.test(e.package_sha256)) entry.packageSha256 = e.package_sha256;
    if (e.source !== undefined) {
      const s = e.source as Record<string, unknown>;
      if (typeof s?.url !== 'string' || typeof s?.sha256 !== 'string')
        throw lockError(file, `${field}.source needs url and sha256`, undefined, `${field}.source`);
      entry.source = { url: s.url, sha256: s.sha256 };
    }
    out.push(entry);
  });
  return { lockVersion: LOCK_VERSION, artifacts: out };
}

/** Reads `<capsuleDir>/murmur.lock`; undefined when absent. */
export function readLock(capsuleDir: string): Lockfile | undefined {
  const file = lockPath(capsuleDir);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  return parseLock(text, file);
}

function q(s: string): string {
  return JSON.stringify(s);
}

/** Stable text: entries sorted by name, fixed key order, every string quoted. */
export function renderLock(lock: Lockfile): string {
  const entries = [...lock.artifacts].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const lines = [
    '# murmur.lock: pins each artifact this capsule stages (name, version, sha256 digest).',
    '# Written by the runtime on first stage and by artifact-manager pull. Commit it.',
    `lock_version: ${LOCK_VERSION}`,
  ];
  if (entries.length === 0) lines.push('artifacts: []');
  else {
    lines.push('artifacts:');
    for (const e of entries) {
      if (e.sha256 === '' && e.packageSha256) {
        // Kept in the reference runtime's format, so Murmur still reads the pin.
        lines.push(`  - name: ${q(e.name)}`, `    resolved_version: ${q(e.version)}`, '    sha256:', `      wasm: ${q(e.packageSha256)}`);
        continue;
      }
      lines.push(`  - name: ${q(e.name)}`, `    version: ${q(e.version)}`, `    sha256: ${q(e.sha256)}`);
      if (e.packageSha256) lines.push(`    package_sha256: ${q(e.packageSha256)}`);
      if (e.source) lines.push('    source:', `      url: ${q(e.source.url)}`, `      sha256: ${q(e.source.sha256)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** Atomic write: temp file in the same directory, fsync, rename. */
export function writeFileAtomic(file: string, text: string): void {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${Date.now()}.tmp`);
  const fd = openSync(tmp, 'w', 0o644);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}

export function writeLock(capsuleDir: string, lock: Lockfile): void {
  writeFileAtomic(lockPath(capsuleDir), renderLock(lock));
}

/** The capsule folder cannot be written (a read-only mount): its lock is then not kept. */
export function isReadOnlyError(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException).code ?? (e as { cause?: NodeJS.ErrnoException }).cause?.code;
  return code === 'EROFS' || code === 'EACCES' || code === 'EPERM';
}

/**
 * writeLock, except where the capsule folder is mounted read-only (a ConfigMap in a pod): that
 * folder keeps no lock, which is not an error — every artifact was still verified against its
 * registry hash or pinned source sha256. Any other failure throws.
 */
export function writeLockIfWritable(capsuleDir: string, lock: Lockfile): 'written' | 'read-only' {
  try {
    writeLock(capsuleDir, lock);
    return 'written';
  } catch (e) {
    if (!isReadOnlyError(e)) throw e;
    return 'read-only';
  }
}

/** Inserts or replaces entries by name; returns a new lock (sorted on render). */
export function upsertLock(lock: Lockfile | undefined, entries: readonly LockEntry[]): Lockfile {
  const map = new Map((lock?.artifacts ?? []).map((e) => [e.name, e]));
  for (const e of entries) map.set(e.name, e);
  return { lockVersion: LOCK_VERSION, artifacts: [...map.values()] };
}

/**
 * A pin conflict for `name`, or undefined when the lock has no entry for it or agrees. Codes:
 * E-REG-003 (version differs), E-REG-004 (digest differs).
 */
export function checkPin(
  lock: Lockfile | undefined,
  file: string,
  want: { name: string; version: string; sha256: string; packageSha256?: string },
): MurError | undefined {
  const pin = lock?.artifacts.find((e) => e.name === want.name);
  if (!pin) return undefined;
  const idx = lock!.artifacts.indexOf(pin);
  if (pin.version !== want.version) {
    return new MurError('E-REG-003', `artifact '${want.name}' resolves to version ${want.version} but ${LOCK_FILE} pins version ${pin.version}`, {
      hint: `stage version ${pin.version} (set it in murmur.yaml), or, to move the pin deliberately, delete the '${want.name}' entry from ${LOCK_FILE}`,
      location: { file, field: `artifacts[${idx}].version` },
    });
  }
  if (pin.sha256 === '' && pin.packageSha256) {
    // A reference-runtime pin: the hash of the .mur.zip the artifact was installed from.
    if (want.packageSha256 === pin.packageSha256) return undefined;
    return new MurError(
      'E-REG-004',
      want.packageSha256
        ? `artifact '${want.name}' ${want.version} was installed from a package with sha256 ${want.packageSha256} but ${LOCK_FILE} pins package ${pin.packageSha256}`
        : `artifact '${want.name}' ${want.version} was not installed from a .mur.zip package, so it cannot be checked against the package hash ${pin.packageSha256} that ${LOCK_FILE} pins`,
      {
        hint: want.packageSha256
          ? `install the pinned package (mur install <file>.mur.zip), or delete the '${want.name}' entry from ${LOCK_FILE} to pin what is installed`
          : `install the package the pin was made from (mur install ${want.name}-${want.version}.mur.zip --registry <dir>), or delete the '${want.name}' entry from ${LOCK_FILE} to re-pin`,
        location: { file, field: `artifacts[${idx}].sha256.wasm` },
      },
    );
  }
  if (pin.sha256 !== want.sha256) {
    return new MurError('E-REG-004', `artifact '${want.name}' ${want.version} has sha256 ${want.sha256} but ${LOCK_FILE} pins ${pin.sha256}`, {
      hint: `the artifact's bytes changed since it was pinned; restore the pinned artifact in the registry, or, if the change is intended, delete the '${want.name}' entry from ${LOCK_FILE}`,
      location: { file, field: `artifacts[${idx}].sha256` },
    });
  }
  return undefined;
}
