/**
 * Staging: `stageCapsule({capsuleDir, registryDir, workRoot})`.
 *
 *  1. load + validate `<capsuleDir>/murmur.yaml` (every error at once, E-MAN-000);
 *  2. read `murmur.lock` if present;
 *  3. resolve every artifact (registry dir, or remote `source` via the sha256-keyed cache), verify
 *     its bytes against the registry record, and parse + validate its own manifest — including the
 *     hook contract against the commit table — all before any component is compiled;
 *  4. check each artifact against its capsule entry and its `murmur.lock` pin;
 *  5. only when 1-4 found nothing: create the session workdir (tools/<name>/, logs/, out/,
 *     trace.jsonl) and write `murmur.lock` (created on first stage; new entries added; existing
 *     pins never rewritten).
 *
 * Any refusal throws one MurErrorList listing every problem, and nothing has been written (the
 * remote cache aside, which only ever holds hash-verified content).
 */
import os from 'node:os';
import path from 'node:path';
import { MurError, isMurError } from '../errors.ts';
import { contractDisagreements, type CommitPolicy, type ExecutionMode, type Handler } from '../contracts/commit-table.ts';
import type { ArtifactManifest } from '../manifest/artifact.ts';
import { effectiveCapabilities, loadManifest, type ArtifactEntry, type CapsuleManifest, type EffectiveGrant } from '../manifest/capsule.ts';
import { MurErrorList, isMurErrorList } from '../manifest/errors.ts';
import type { ArtifactRuntime } from '../manifest/schema.ts';
import { checkPin, lockPath, readLock, upsertLock, writeLockIfWritable, type LockEntry, type Lockfile } from '../registry/lock.ts';
import { ARTIFACT_MANIFEST, SKILL_FILE, resolveFromRegistry, type VerifiedArtifact } from '../registry/registry.ts';
import { resolveRemote } from '../registry/remote.ts';
import { ociLockSource, resolveOci } from '../registry/oci-source.ts';
import { newSessionId } from './id.ts';
import { fileIdentity, type FileIdentity } from '../host/transpile-cache.ts';
import { createWorkdir, toolDir, type WorkdirLayout } from './workdir.ts';

export interface StageOptions {
  capsuleDir: string;
  registryDir: string;
  /** Session workdirs are created as `<workRoot>/<session-id>/`. */
  workRoot: string;
  /** Remote-artifact cache. Default: $MURMUR_CACHE_DIR, else ~/.cache/murmur/artifacts. */
  cacheDir?: string;
  /** Default: a fresh `newSessionId()`. */
  sessionId?: string;
}

export interface StagedArtifact {
  name: string;
  version: string;
  runtime: ArtifactRuntime;
  /** Artifact digest (as pinned in murmur.lock). */
  sha256: string;
  /** SHA-256 of the `.mur.zip` it was installed from, when it was (the reference runtime's pin). */
  packageSha256?: string;
  /** `<workdir>/tools/<name>/` */
  dir: string;
  /** `<workdir>/tools/<name>/<name>.wasm`; undefined for skills. */
  wasmPath?: string;
  /**
   * SHA-256 of the component bytes staging verified and wrote to `wasmPath`: its load is pinned to
   * it (loadComponent), so bytes changed in the workdir after staging are refused, never run.
   */
  wasmSha256?: string;
  /** `wasmPath`'s identity right after staging wrote it (loadComponent: unchanged since then). */
  wasmIdentity?: FileIdentity;
  /** `<workdir>/tools/<name>/skill.md`; skills only. */
  skillPath?: string;
  /** `<workdir>/tools/<name>/murmur.yaml` */
  manifestPath: string;
  /** The artifact's own manifest (description, schemas, hook contract). */
  manifest: ArtifactManifest;
  /** The capsule's entry; undefined for artifacts installed by artifact-manager pull. */
  entry?: ArtifactEntry;
  origin: 'registry' | 'remote' | 'pull';
  /** Remote artifacts: the pinned source. */
  source?: { url: string; sha256: string };
  /** The grant this artifact runs under (per-artifact block narrowed from the capsule's). */
  grant: EffectiveGrant;
}

export interface StagedHook {
  name: string;
  version: string;
  /** Undefined = every session event except on-stage. */
  binding?: Handler;
  handlers: readonly Handler[];
  executionMode: ExecutionMode;
  commitPolicy: CommitPolicy;
  onOverflow: 'drop' | 'block';
  wasmPath: string;
  manifestPath: string;
  /** Per-call deadline (capabilities.limits.hook_deadline_seconds, narrowed per artifact). */
  deadlineSeconds: number;
  memoryBytes: number;
  grant: EffectiveGrant;
  config?: Record<string, unknown>;
}

export interface StagedCapsule {
  manifest: CapsuleManifest;
  capsuleDir: string;
  registryDir: string;
  lockPath: string;
  sessionId: string;
  workdir: WorkdirLayout;
  /** Every installed artifact, in manifest order; artifact-manager pull appends to this array. */
  artifacts: StagedArtifact[];
  /** Hook artifacts, in manifest order (the blocking dispatch order). */
  hooks: StagedHook[];
  /** The driver artifact of an agent capsule. */
  driver?: StagedArtifact;
  /** What staging did to murmur.lock. */
  lock: 'created' | 'updated' | 'unchanged' | 'read-only';
  /** Things the user should know that are not errors (a lock-pinned version staged instead of murmur.yaml's). */
  notices: string[];
}

export function defaultCacheDir(): string {
  return process.env.MURMUR_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'murmur', 'artifacts');
}

/** Splits an error into the aggregate's list. */
function collect(into: MurError[], e: unknown): void {
  if (isMurErrorList(e)) into.push(...e.errors);
  else if (isMurError(e)) into.push(e);
  else throw e;
}

/** Checks a resolved artifact against its capsule entry (E-REG-011). */
function entryMismatch(entry: ArtifactEntry, a: VerifiedArtifact, file: string, index: number, version = entry.version): MurError | undefined {
  const diffs: string[] = [];
  if (a.name !== entry.name) diffs.push(`name '${a.name}'`);
  if (a.runtime !== entry.runtime) diffs.push(`runtime '${a.runtime}' (murmur.yaml says '${entry.runtime}')`);
  if (version !== undefined && a.version !== version) diffs.push(`version '${a.version}' (murmur.yaml says '${version}')`);
  if (diffs.length === 0) return undefined;
  return new MurError('E-REG-011', `artifact '${entry.name}' resolved to an artifact with ${diffs.join(', ')}`, {
    hint: `make artifacts[${index}] in murmur.yaml match the artifact's own manifest (${a.name} ${a.version}, runtime ${a.runtime})`,
    location: { file, field: `artifacts[${index}]` },
  });
}

/**
 * Checks a hook's capsule-entry contract against the artifact's own (E-REG-017). The artifact's own
 * manifest is the contract the runtime enforces (for a bare component it was derived from this very
 * entry, so they agree by construction); a capsule that expects another one is refused, never run
 * under either silently — an entry saying `commit_policy: deny` over an observer would be a policy
 * the capsule believes in and nothing enforces.
 */
function contractMismatch(entry: ArtifactEntry, a: VerifiedArtifact, file: string, index: number): MurError | undefined {
  const own = a.manifest.hook;
  if (a.runtime !== 'hook' || !own) return undefined;
  const diffs = contractDisagreements(
    { binding: entry.binding, execution_mode: entry.executionMode, commit_policy: entry.commitPolicy },
    { binding: own.binding, execution_mode: own.executionMode, commit_policy: own.commitPolicy },
  );
  if (diffs.length === 0) return undefined;
  const say = (v: string) => (v === 'absent' ? 'no binding (every session event)' : `'${v}'`);
  const ownContract = `binding ${own.binding ?? '(none: every session event)'}, execution_mode ${own.executionMode}, commit_policy ${own.commitPolicy}`;
  return new MurError(
    'E-REG-017',
    `hook '${entry.name}': artifacts[${index}] declares ${diffs.map((d) => `${d.field} ${say(d.declared)}`).join(', ')} but the artifact's own manifest (${a.manifest.file}) declares ${diffs.map((d) => `${d.field} ${say(d.own)}`).join(', ')}`,
    {
      hint: `the artifact's own murmur.yaml is the hook's contract (${ownContract}): make artifacts[${index}] say the same or leave its ${diffs.map((d) => d.field).join('/')} out; for another contract, publish the hook with that contract in its own murmur.yaml (or serve the bare .wasm, whose manifest is derived from the entry)`,
      location: { file, field: `artifacts[${index}].${diffs[0]!.field}` },
    },
  );
}

export function lockEntryOf(a: { name: string; version: string; sha256: string; packageSha256?: string; source?: { url: string; sha256: string } }): LockEntry {
  return {
    name: a.name,
    version: a.version,
    sha256: a.sha256,
    ...(a.packageSha256 ? { packageSha256: a.packageSha256 } : {}),
    ...(a.source ? { source: { url: a.source.url, sha256: a.source.sha256 } } : {}),
  };
}

export function stagedArtifactOf(
  w: WorkdirLayout,
  a: VerifiedArtifact,
  origin: StagedArtifact['origin'],
  grant: EffectiveGrant,
  entry?: ArtifactEntry,
): StagedArtifact {
  const dir = toolDir(w, a.name);
  return {
    name: a.name,
    version: a.version,
    runtime: a.runtime,
    sha256: a.sha256,
    ...(a.packageSha256 ? { packageSha256: a.packageSha256 } : {}),
    dir,
    ...(a.runtime === 'skill'
      ? { skillPath: path.join(dir, SKILL_FILE) }
      : {
          wasmPath: path.join(dir, a.payload),
          ...(a.fileSha256[a.payload] ? { wasmSha256: a.fileSha256[a.payload], wasmIdentity: fileIdentity(path.join(dir, a.payload)) } : {}),
        }),
    manifestPath: path.join(dir, ARTIFACT_MANIFEST),
    manifest: { ...a.manifest, file: path.join(dir, ARTIFACT_MANIFEST) },
    ...(entry ? { entry } : {}),
    origin,
    ...(entry?.source ? { source: { ...entry.source } } : {}),
    grant,
  };
}

export async function stageCapsule(opts: StageOptions): Promise<StagedCapsule> {
  const capsuleDir = path.resolve(opts.capsuleDir);
  const registryDir = path.resolve(opts.registryDir);
  const manifest = loadManifest(capsuleDir);
  const lockFile = lockPath(capsuleDir);
  const lock: Lockfile | undefined = readLock(capsuleDir);

  // Resolve + verify every artifact (reads only; the remote cache holds verified content only).
  const errors: MurError[] = [];
  const resolved: (VerifiedArtifact | undefined)[] = [];
  const notices: string[] = [];
  for (const [i, entry] of manifest.artifacts.entries()) {
    try {
      // A version pinned in murmur.lock wins over murmur.yaml's, as in the reference runtime: the
      // lock is what was verified and committed; moving a pin is deleting its entry.
      const pinned = entry.source || entry.oci ? undefined : lock?.artifacts.find((p) => p.name === entry.name)?.version;
      const version = pinned ?? entry.version!;
      if (pinned !== undefined && pinned !== entry.version) {
        notices.push(
          `${entry.name}: murmur.yaml asks for version ${entry.version}, murmur.lock pins ${pinned}; staging ${pinned} (delete the '${entry.name}' entry from murmur.lock to move to ${entry.version})`,
        );
      }
      let a = entry.oci
        ? await resolveOci(entry, opts.cacheDir ?? defaultCacheDir())
        : entry.source
          ? await resolveRemote(entry, opts.cacheDir ?? defaultCacheDir())
          : resolveFromRegistry(registryDir, entry.name, version);
      // `runtime: wasm` in the artifact's own manifest: the capsule entry gives the role.
      if (a.manifest.roleFromEntry && (entry.runtime === 'tool' || entry.runtime === 'driver')) {
        a = { ...a, runtime: entry.runtime, manifest: { ...a.manifest, runtime: entry.runtime } };
      }
      const mismatch = entryMismatch(entry, a, manifest.file, i, entry.source || entry.oci ? entry.version : version);
      if (mismatch) throw mismatch;
      const contract = contractMismatch(entry, a, manifest.file, i);
      if (contract) throw contract;
      const pin = checkPin(lock, lockFile, a);
      if (pin) throw pin;
      resolved.push(a);
    } catch (e) {
      collect(errors, e);
      resolved.push(undefined);
    }
  }
  if (errors.length > 0) {
    const code = errors.some((e) => e.code.startsWith('E-REG')) ? 'E-REG-000' : 'E-MAN-000';
    throw new MurErrorList(code, `cannot stage ${manifest.name} ${manifest.version}`, errors);
  }
  const verified = resolved as VerifiedArtifact[];

  // Everything checked: now write.
  const sessionId = opts.sessionId ?? newSessionId();
  const workdir = createWorkdir(
    opts.workRoot,
    sessionId,
    verified.map((a) => ({ name: a.name, files: a.files })),
  );
  const artifacts = verified.map((a, i) => {
    const entry = manifest.artifacts[i]!;
    const staged = stagedArtifactOf(workdir, a, entry.source || entry.oci ? 'remote' : 'registry', effectiveCapabilities(manifest, entry.name), entry);
    return entry.oci ? { ...staged, source: ociLockSource(entry) } : staged;
  });

  const newEntries = artifacts.filter((a) => !lock?.artifacts.some((p) => p.name === a.name)).map(lockEntryOf);
  let lockState: StagedCapsule['lock'] = 'unchanged';
  if (!lock || newEntries.length > 0) {
    const written = writeLockIfWritable(capsuleDir, upsertLock(lock, newEntries));
    lockState = written === 'read-only' ? 'read-only' : lock ? 'updated' : 'created';
  }

  const hooks: StagedHook[] = artifacts
    .filter((a) => a.runtime === 'hook')
    .map((a) => {
      const c = a.manifest.hook!;
      return {
        name: a.name,
        version: a.version,
        ...(c.binding ? { binding: c.binding } : {}),
        handlers: c.handlers,
        executionMode: c.executionMode,
        commitPolicy: c.commitPolicy,
        onOverflow: a.entry?.onOverflow ?? 'drop',
        wasmPath: a.wasmPath!,
        manifestPath: a.manifestPath,
        deadlineSeconds: a.grant.limits.hookDeadlineSeconds,
        memoryBytes: a.grant.limits.memoryBytes,
        grant: a.grant,
        ...(a.entry?.config ? { config: a.entry.config } : {}),
      };
    });

  const driverName = manifest.inference?.driver.artifact;
  const driver = driverName ? artifacts.find((a) => a.name === driverName) : undefined;
  return {
    manifest,
    capsuleDir,
    registryDir,
    lockPath: lockFile,
    sessionId,
    workdir,
    artifacts,
    hooks,
    ...(driver ? { driver } : {}),
    lock: lockState,
    notices,
  };
}
