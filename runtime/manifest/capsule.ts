/**
 * The capsule manifest: `parseManifest(text, file)` and `loadManifest(dir)`.
 *
 * Naming: the YAML uses snake_case (`max_turns`); the typed `CapsuleManifest` uses camelCase
 * (`maxTurns`), converted key by key. Opaque mappings (`config`, `driver.config`, `otel_headers`)
 * keep their keys exactly as written. Every default is applied, so consumers never re-default.
 */
import path from 'node:path';
import { MurError, isMurError } from '../errors.ts';
import { checkBoundedFile, manifestBound, promptFileBound, readBoundedFile } from './bounded-file.ts';
import { semanticChecks } from './capsule-checks.ts';
import type { Capabilities, CapsuleManifest, Inference } from './capsule-types.ts';
import { ErrorCollector } from './errors.ts';
import { CAPSULE_REFERENCE_KEYS } from './reference-keys.ts';
import { CAPSULE_SCHEMA } from './schema.ts';
import { walkYaml, type WalkResult } from './validate.ts';

export type { McpConfig, McpServer } from './mcp.ts';

export const MANIFEST_FILE = 'murmur.yaml';

export type {
  Limits,
  Capabilities,
  ArtifactCapabilities,
  ArtifactSource,
  ArtifactEntry,
  Compaction,
  Inference,
  Context,
  Lifecycle,
  Observability,
  CapsuleManifest,
} from './capsule-types.ts';

/** Parses and validates manifest text. Throws one MurErrorList (code E-MAN-000) listing every problem. */
export function parseManifest(text: string, file: string = MANIFEST_FILE): CapsuleManifest {
  const errors = new ErrorCollector();
  const walked = walkYaml(text, file, CAPSULE_SCHEMA, errors, CAPSULE_REFERENCE_KEYS);
  if (walked) semanticChecks(walked, file, errors);
  errors.throwIfAny('E-MAN-000', `invalid capsule manifest ${file}`);
  return finish(walked!.value, file);
}

/**
 * Reads `<dir>/murmur.yaml`, validates it, and checks files it names (system prompt files) are
 * regular files within their bound inside `dir`. Throws E-MAN-021 when the manifest is missing,
 * E-MAN-030/031 when it is not a regular file or too large, MurErrorList E-MAN-000 otherwise.
 */
export function loadManifest(dir: string): CapsuleManifest {
  const abs = path.resolve(dir);
  const file = path.join(abs, MANIFEST_FILE);
  let text: string;
  try {
    text = readBoundedFile(file, manifestBound('capsule', file));
  } catch (e) {
    if (isMurError(e)) throw e;
    throw new MurError('E-MAN-021', `cannot read capsule manifest ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, {
      hint: `create ${MANIFEST_FILE} in ${abs} (a capsule directory holds its murmur.yaml), or point at the right directory`,
      location: { file },
      cause: e,
    });
  }
  const errors = new ErrorCollector();
  const walked = walkYaml(text, file, CAPSULE_SCHEMA, errors, CAPSULE_REFERENCE_KEYS);
  if (walked) {
    semanticChecks(walked, file, errors);
    fileChecks(walked, abs, file, errors);
  }
  errors.throwIfAny('E-MAN-000', `invalid capsule manifest ${file}`);
  return { ...finish(walked!.value, file), dir: abs };
}

function finish(v: Record<string, unknown>, file: string): CapsuleManifest {
  const m = v as unknown as CapsuleManifest;
  for (const a of m.artifacts) {
    if (a.runtime === 'hook') a.onOverflow ??= 'drop';
    const src = a.source as { oci?: string } | undefined;
    if (src?.oci) {
      a.oci = src.oci;
      delete a.source;
    }
  }
  // The reference runtime's older spellings (semanticChecks refused a conflict): one meaning each.
  const inf = m.inference as (Inference & { provider?: { artifact: string }; maxTaskReopens?: number }) | undefined;
  if (inf?.provider) {
    inf.driver ??= { artifact: inf.provider.artifact };
    delete inf.provider;
  }
  if (inf?.maxTaskReopens !== undefined) {
    m.lifecycle.maxTaskReopens = inf.maxTaskReopens;
    delete inf.maxTaskReopens;
  }
  if (m.observability.otelEndpoint === '') delete m.observability.otelEndpoint;
  m.kind = m.inference ? 'agent' : 'script';
  m.file = file;
  return m;
}

function fileChecks(w: WalkResult, dir: string, file: string, errors: ErrorCollector): void {
  for (const field of ['inference.system_prompt_file', 'inference.compaction.system_prompt_file']) {
    const p = w.locs.get(field);
    if (!p) continue;
    const rel =
      field === 'inference.system_prompt_file'
        ? (w.value as unknown as CapsuleManifest).inference?.systemPromptFile
        : (w.value as unknown as CapsuleManifest).inference?.compaction?.systemPromptFile;
    if (typeof rel !== 'string') continue;
    const target = path.join(dir, rel);
    const problem = checkBoundedFile(target, promptFileBound(rel, target));
    const at = { file, line: p.line, column: p.column, field };
    if (problem === 'missing') {
      errors.add(
        'E-MAN-022',
        `${field.split('.').pop()} '${rel}' does not exist (looked for ${target})`,
        `create the file, or fix the path (it is relative to ${dir})`,
        at,
      );
    } else if (problem) {
      errors.add(problem.code, problem.message, problem.hint, at);
    }
  }
}

/** The grant an artifact actually receives: a declared block narrows the capsule's; tools and drivers inherit what they don't declare; hooks get no network and no filesystem unless granted. */
export interface EffectiveGrant extends Omit<Capabilities, 'filesystem'> {
  /** `scope: null` = no directory is preopened (a hook without a filesystem grant). */
  filesystem: { scope: string | null };
}

export function effectiveCapabilities(m: CapsuleManifest, artifactName: string): EffectiveGrant {
  const entry = m.artifacts.find((a) => a.name === artifactName);
  const ceil = m.capabilities;
  const decl = entry?.capabilities;
  const hook = entry?.runtime === 'hook';
  return {
    network: { allow: decl?.network?.allow ?? (hook ? [] : [...ceil.network.allow]) },
    filesystem: { scope: decl?.filesystem?.scope ?? (hook ? null : ceil.filesystem.scope) },
    ...(decl?.shell
      ? { shell: { allow: decl.shell.allow, stripEnv: [...new Set([...(ceil.shell?.stripEnv ?? []), ...(decl.shell.stripEnv ?? [])])] } }
      : ceil.shell && !hook
        ? { shell: { allow: [...ceil.shell.allow], stripEnv: [...ceil.shell.stripEnv] } }
        : {}),
    env: { allow: decl?.env?.allow ?? (hook ? [] : [...ceil.env.allow]) },
    limits: { ...ceil.limits, ...(decl?.limits ?? {}) },
  };
}
