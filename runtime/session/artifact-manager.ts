/**
 * `murmur:artifact-manager/manage` over a staged session, in plain TypeScript. The WASM binding is
 * wired elsewhere; every method here is synchronous (jco host imports are called synchronously)
 * and returns WIT-shaped values (camelCase as jco generates: `inputSchema`, `capsuleId`).
 *
 * - list / describe / diagnostics report what is installed in this session.
 * - pull(name, version) resolves from the session's registry, verifies the registry hash and any
 *   murmur.lock pin BEFORE writing anything, installs under `<workdir>/tools/<name>/`, upserts the
 *   lock, and appends to `staged.artifacts` so list/describe/invoke see it immediately.
 * - search / remove are not implemented and always return an error.
 */
import { rmSync } from 'node:fs';
import { MurError, isMurError } from '../errors.ts';
import { effectiveCapabilities } from '../manifest/capsule.ts';
import { isMurErrorList } from '../manifest/errors.ts';
import { lockEntryOf, stagedArtifactOf, type StagedArtifact, type StagedCapsule } from './stage.ts';
import { installTool } from './workdir.ts';
import { checkPin, readLock, upsertLock, writeLockIfWritable } from '../registry/lock.ts';
import { resolveFromRegistry } from '../registry/registry.ts';

export type Result<T> = { tag: 'ok'; val: T } | { tag: 'err'; val: string };

/** WIT `runtime-type`. Every artifact this runtime installs is a WASM artifact (skills included). */
export type RuntimeType = 'wasm' | 'native';

export interface ArtifactSummary {
  name: string;
  version: string;
  runtime: RuntimeType;
}

export interface ArtifactInfo {
  name: string;
  version: string;
  description: string;
  tags: string[];
  runtime: RuntimeType;
  /** JSON text of the input schema. */
  inputSchema?: string;
  outputSchema?: string;
}

export interface RuntimeState {
  /** The session id (`ses_` + 32 hex). */
  capsuleId: string;
  installed: ArtifactSummary[];
  /** JSON text of the capsule-wide grant (capabilities, camelCase). */
  capabilities: string;
}

const ok = <T>(val: T): Result<T> => ({ tag: 'ok', val });
const err = <T>(val: string): Result<T> => ({ tag: 'err', val });

function message(e: unknown): string {
  if (isMurErrorList(e)) return e.errors.map((x) => `${x.message} [${x.code}]`).join('; ');
  if (isMurError(e)) return `${e.message} [${e.code}]${e.hint ? ` (hint: ${e.hint})` : ''}`;
  return e instanceof Error ? e.message : String(e);
}

export interface ArtifactManagerOptions {
  /** Called after a pull installed an artifact (e.g. to register a new tool for invoke). */
  onInstalled?: (a: StagedArtifact) => void;
}

export class ArtifactManager {
  constructor(
    readonly staged: StagedCapsule,
    private readonly opts: ArtifactManagerOptions = {},
  ) {}

  private summary(a: StagedArtifact): ArtifactSummary {
    return { name: a.name, version: a.version, runtime: 'wasm' };
  }

  /** Installed artifacts, in install order. */
  list(): ArtifactSummary[] {
    return this.staged.artifacts.map((a) => this.summary(a));
  }

  describe(name: string): Result<ArtifactInfo> {
    const a = this.staged.artifacts.find((x) => x.name === name);
    if (!a) return err(`artifact '${name}' is not installed in this session (installed: ${this.staged.artifacts.map((x) => x.name).join(', ') || 'none'})`);
    const m = a.manifest;
    return ok({
      name: a.name,
      version: a.version,
      description: m.description,
      tags: [...m.tags],
      runtime: 'wasm',
      ...(m.inputSchema ? { inputSchema: JSON.stringify(m.inputSchema) } : {}),
      ...(m.outputSchema ? { outputSchema: JSON.stringify(m.outputSchema) } : {}),
    });
  }

  diagnostics(): Result<RuntimeState> {
    return ok({ capsuleId: this.staged.sessionId, installed: this.list(), capabilities: JSON.stringify(this.staged.manifest.capabilities) });
  }

  search(_query: string): Result<ArtifactSummary[]> {
    return err('not implemented: artifact-manager search is not supported by this runtime');
  }

  remove(_name: string): Result<boolean> {
    return err('not implemented: artifact-manager remove is not supported by this runtime');
  }

  pull(name: string, version: string): Result<ArtifactSummary> {
    const s = this.staged;
    try {
      // Verify everything first: registry hash (resolve), installed state, lock pin.
      const a = resolveFromRegistry(s.registryDir, name, version);
      const installed = s.artifacts.find((x) => x.name === name);
      if (installed) {
        if (installed.version === a.version && installed.sha256 === a.sha256) return ok(this.summary(installed));
        throw new MurError('E-REG-013', `artifact '${name}' is already installed at version ${installed.version} (sha256 ${installed.sha256})`, {
          hint: 'an installed artifact cannot be replaced within a session; start a new session',
        });
      }
      const lock = readLock(s.capsuleDir);
      const pin = checkPin(lock, s.lockPath, a);
      if (pin) throw pin;
      // Then write: tools/<name>/ (atomic), then the lock. A read-only capsule folder (a ConfigMap in
      // a pod) keeps no lock, as at staging; any other failure takes the install back.
      const dir = installTool(s.workdir, { name: a.name, files: a.files });
      try {
        writeLockIfWritable(s.capsuleDir, upsertLock(lock, [lockEntryOf(a)]));
      } catch (e) {
        rmSync(dir, { recursive: true, force: true });
        throw e;
      }
      const staged = stagedArtifactOf(s.workdir, a, 'pull', effectiveCapabilities(s.manifest, a.name));
      s.artifacts.push(staged);
      this.opts.onInstalled?.(staged);
      return ok(this.summary(staged));
    } catch (e) {
      return err(`pull ${name} ${version} refused: ${message(e)}`);
    }
  }

  /**
   * The same methods in jco's import convention: ok values returned, err values thrown as an
   * Error carrying `payload` (the err string). The binding layer may use this directly.
   */
  jcoImports(): Record<'list' | 'describe' | 'search' | 'pull' | 'remove' | 'diagnostics', (...args: never[]) => unknown> {
    const unwrap = <T>(r: Result<T>): T => {
      if (r.tag === 'ok') return r.val;
      throw Object.assign(new Error(r.val), { payload: r.val });
    };
    return {
      list: () => this.list(),
      describe: (name: string) => unwrap(this.describe(name)),
      search: (q: string) => unwrap(this.search(q)),
      pull: (name: string, version: string) => unwrap(this.pull(name, version)),
      remove: (name: string) => unwrap(this.remove(name)),
      diagnostics: () => unwrap(this.diagnostics()),
    };
  }
}
