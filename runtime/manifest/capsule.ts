/**
 * The capsule manifest: `parseManifest(text, file)` and `loadManifest(dir)`.
 *
 * Naming: the YAML uses snake_case (`max_turns`); the typed `CapsuleManifest` uses camelCase
 * (`maxTurns`), converted key by key. Opaque mappings (`config`, `driver.config`, `otel_headers`)
 * keep their keys exactly as written. Every default is applied, so consumers never re-default.
 */
import path from 'node:path';
import { MurError, isMurError } from '../errors.ts';
import { CONTRACT_FIELDS, checkHookContract, type CommitPolicy, type ExecutionMode, type Handler } from '../contracts/commit-table.ts';
import { isProblem, networkCovers, parseNetworkEntry, scopeCovers, type NetworkEntry } from './checks.ts';
import { contractHint } from './artifact.ts';
import { checkBoundedFile, manifestBound, promptFileBound, readBoundedFile } from './bounded-file.ts';
import { ErrorCollector } from './errors.ts';
import { CAPSULE_REFERENCE_KEYS } from './reference-keys.ts';
import { CAPSULE_SCHEMA, type ArtifactRuntime } from './schema.ts';
import { walkYaml, type Position, type WalkResult } from './validate.ts';
import { mcpChecks, type McpConfig } from './mcp.ts';

export type { McpConfig, McpServer } from './mcp.ts';

export const MANIFEST_FILE = 'murmur.yaml';

export interface Limits {
  memoryBytes: number;
  deadlineSeconds: number;
  hookDeadlineSeconds: number;
}

export interface Capabilities {
  network: { allow: string[] };
  /** `scope` is `.` (whole workdir) unless narrowed. */
  filesystem: { scope: string };
  /** Absent = no shell tool. */
  shell?: { allow: string[]; stripEnv: string[] };
  env: { allow: string[] };
  limits: Limits;
}

/** A per-artifact grant exactly as declared (no defaults: absent parts inherit / deny). */
export interface ArtifactCapabilities {
  network?: { allow?: string[] };
  filesystem?: { scope?: string };
  shell?: { allow: string[]; stripEnv?: string[] };
  env?: { allow?: string[] };
  limits?: Partial<Limits>;
  /** Hooks: `murmur:task-io/read` granted. */
  taskIo?: { read?: boolean };
  /** Hooks: `murmur:conversation/read` granted. */
  conversation?: { read?: boolean };
}

export interface ArtifactSource {
  url: string;
  sha256: string;
}

export interface ArtifactEntry {
  name: string;
  /** `source: {oci: ...}`: a digest-pinned Wasm OCI artifact (then `source` is absent). */
  oci?: string;
  /** Absent only for `source` artifacts (then taken from the fetched artifact). */
  version?: string;
  runtime: ArtifactRuntime;
  source?: ArtifactSource;
  capabilities?: ArtifactCapabilities;
  /** Hooks only; `drop` unless declared. Undefined for other runtimes. */
  onOverflow?: 'drop' | 'block';
  config?: Record<string, unknown>;
  /**
   * Hooks only: the contract the capsule expects (as declared, no defaults). A component without a
   * murmur.yaml of its own (bare `.wasm`, OCI) gets it as its derived manifest's contract; an
   * artifact with its own must agree with it (staging, E-REG-017).
   */
  binding?: Handler;
  executionMode?: ExecutionMode;
  commitPolicy?: CommitPolicy;
}

export interface Compaction {
  threshold: number;
  model?: string;
  systemPrompt?: string;
  systemPromptFile?: string;
  dumpSummaries: boolean;
}

export interface Inference {
  driver: { artifact: string; config?: Record<string, unknown> };
  model: string;
  endpoint?: string;
  /** Always `http` once validated (`process` is refused). */
  transport: 'http';
  /** Literal key or `${VAR}` reference, resolved at driver start. */
  apiKey?: string;
  maxTurns: number;
  maxTokens: number;
  maxSessionTokens?: number;
  systemPrompt?: string;
  systemPromptFile?: string;
  compaction: Compaction;
}

export interface Context {
  maxTokens?: number;
  seedBudget: number;
  seedOverflowMargin: number;
}

export interface Lifecycle {
  taskAcceptance: 'none' | 'single' | 'queue';
  queueDepth: number;
  inputTimeoutSecs?: number;
  conversation: 'stateless' | 'threaded';
  maxTaskReopens: number;
  delegationDeadlineSecs: number;
}

export interface Observability {
  /** Undefined when absent or empty. */
  otelEndpoint?: string;
  otelHeaders: Record<string, string>;
  metricsPort?: number;
}

export interface CapsuleManifest {
  name: string;
  version: string;
  artifacts: ArtifactEntry[];
  capabilities: Capabilities;
  /** Absent = script capsule. */
  inference?: Inference;
  context: Context;
  lifecycle: Lifecycle;
  observability: Observability;
  trace: { includeToolOutput: boolean };
  /** This runtime's extension: the MCP servers the capsule may use (docs/mcp.md). */
  mcp?: McpConfig;
  /** `agent` when `inference` is present, else `script`. */
  kind: 'agent' | 'script';
  /** The file it was parsed from (as given to parseManifest / the absolute path from loadManifest). */
  file: string;
  /** The capsule directory (loadManifest only). */
  dir?: string;
}

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

type Loc = (field: string) => Position;

function semanticChecks(w: WalkResult, file: string, errors: ErrorCollector): void {
  const v = w.value as unknown as CapsuleManifest;
  const at: Loc = (field) => w.locs.get(field) ?? w.keyLocs.get(field) ?? { line: 1, column: 1 };
  const keyAt: Loc = (field) => w.keyLocs.get(field) ?? at(field);
  const add = (code: string, field: string, p: Position, message: string, hint: string) =>
    errors.add(code, message, hint, { file, line: p.line, column: p.column, field });

  const seen = new Map<string, number>();
  const artifacts = (v.artifacts ?? []) as (ArtifactEntry | undefined)[];
  artifacts.forEach((a, i) => {
    if (!a || typeof a.name !== 'string') return;
    const base = `artifacts[${i}]`;
    const first = seen.get(a.name);
    if (first !== undefined) {
      add('E-MAN-013', `${base}.name`, at(`${base}.name`), `duplicate artifact name '${a.name}' (first declared at artifacts[${first}], line ${at(`artifacts[${first}].name`).line})`, 'give every artifact a unique name, or remove the duplicate entry');
    } else seen.set(a.name, i);
    const src = a.source as { url?: string; sha256?: string; oci?: string } | undefined;
    if (src) {
      if (src.oci !== undefined && (src.url !== undefined || src.sha256 !== undefined)) {
        add('E-MAN-012', `${base}.source`, at(`${base}.source`), `artifact '${a.name}' gives both source.oci and source.url/sha256`, 'keep one: `source: {oci: <registry>/<repo>:<tag>@sha256:<hex>}` or `source: {url: <url>, sha256: <hex>}`');
      } else if (src.oci === undefined && !w.keyLocs.has(`${base}.source.oci`) && ((src.url === undefined && !w.keyLocs.has(`${base}.source.url`)) || (src.sha256 === undefined && !w.keyLocs.has(`${base}.source.sha256`)))) {
        const missing = src.url === undefined ? 'url' : 'sha256';
        // A key that is present but invalid has its own error already.
        add('E-MAN-002', `${base}.source.${missing}`, at(`${base}.source`), `missing required field '${missing}' in source of artifact '${a.name}'`, 'give `source: {url: <http(s) url>, sha256: <64 hex>}`, or `source: {oci: <registry>/<repo>:<tag>@sha256:<hex>}`');
      }
    }
    if (a.version === undefined && a.source === undefined && !w.keyLocs.has(`${base}.version`)) {
      add('E-MAN-002', `${base}.version`, at(base), `missing required field 'version' in artifact '${a.name}'`, "add `version:` with the exact version to stage from the registry (e.g. version: '1.0.0'), or give a remote `source: {url, sha256}`");
    }
    if (a.onOverflow !== undefined && a.runtime !== 'hook') {
      add('E-MAN-015', `${base}.on_overflow`, keyAt(`${base}.on_overflow`), `'on_overflow' applies to hooks only; artifact '${a.name}' has runtime '${a.runtime}'`, "remove `on_overflow:`, or set `runtime: hook` if this artifact is a hook");
    }
    const contractKeys = CONTRACT_FIELDS.filter((k) => w.keyLocs.has(`${base}.${k}`));
    if (contractKeys.length && a.runtime !== 'hook') {
      for (const k of contractKeys) add('E-MAN-015', `${base}.${k}`, keyAt(`${base}.${k}`), `'${k}' applies to hooks only; artifact '${a.name}' has runtime '${a.runtime}'`, `remove \`${k}:\`, or set \`runtime: hook\` if this artifact is a hook`);
    } else if (contractKeys.length && contractKeys.every((k) => a[k === 'binding' ? 'binding' : k === 'execution_mode' ? 'executionMode' : 'commitPolicy'] !== undefined)) {
      // The same table check as an artifact's own manifest (E-MAN-020), here at the capsule entry.
      const violation = checkHookContract({ binding: a.binding, execution_mode: a.executionMode, commit_policy: a.commitPolicy });
      if (violation) {
        const f = `${base}.${violation.field}`;
        add('E-MAN-020', f, w.keyLocs.has(f) ? at(f) : keyAt(base), `hook contract violation in artifact '${a.name}': ${violation.message}`, contractHint(violation.field, a.binding, a.commitPolicy));
      }
    }
    if (a.capabilities !== undefined && a.runtime === 'skill') {
      add('E-MAN-015', `${base}.capabilities`, keyAt(`${base}.capabilities`), `skill '${a.name}' cannot carry capabilities; a skill runs no code`, 'remove the `capabilities:` block from this entry');
    } else if (a.capabilities) {
      narrowingChecks(a.capabilities, v.capabilities, base, at, add);
    }
  });

  mcpChecks(v.mcp, v.capabilities?.network?.allow ?? [], v.capabilities?.shell?.allow ?? [], (code, field, message, hint) => add(code, field, w.locs.has(field) || w.keyLocs.has(field) ? at(field) : keyAt(field.replace(/\.[a-z_]+$/, '')), message, hint), (f) => w.keyLocs.has(f));

  const inf = v.inference;
  if (inf) {
    if ((inf as { transport?: string }).transport === 'process') {
      add('E-MAN-004', 'inference.transport', at('inference.transport'), "inference.transport 'process' (a Claude Code / Codex subprocess) is not supported: inference here always runs through the capsule's driver component",
        'remove `transport: process` (or write `transport: http`) and name a driver: `inference: {driver: {artifact: <driver>}, model: <model>, endpoint: <url>}` with an artifact `{name: <driver>, version: <v>, runtime: driver}`');
    }
    exclusive(w, 'inference', add, keyAt);
    exclusive(w, 'inference.compaction', add, keyAt);
    const provider = (inf as { provider?: { artifact?: string } }).provider;
    if (!w.keyLocs.has('inference.driver') && !w.keyLocs.has('inference.provider')) {
      add('E-MAN-002', 'inference.driver', keyAt('inference'), "missing required field 'driver' in 'inference'", 'add `driver: {artifact: <name of an artifact with runtime: driver>}` under `inference:`');
    } else if (w.keyLocs.has('inference.driver') && w.keyLocs.has('inference.provider')) {
      add('E-MAN-012', 'inference.provider', keyAt('inference.provider'), "'inference' sets both driver and provider (the reference runtime's older spelling of driver)", 'keep `driver:` and remove `provider:`');
    }
    const reopens = (inf as { maxTaskReopens?: unknown }).maxTaskReopens;
    if (typeof reopens === 'number' && w.keyLocs.has('lifecycle.max_task_reopens') && reopens !== v.lifecycle?.maxTaskReopens) {
      add('E-MAN-012', 'inference.max_task_reopens', keyAt('inference.max_task_reopens'), `inference.max_task_reopens (${reopens}, the reference runtime's v0.2 spelling) disagrees with lifecycle.max_task_reopens (${String(v.lifecycle?.maxTaskReopens)})`, 'keep one: `lifecycle.max_task_reopens`');
    }
    const d = (inf.driver ?? provider)?.artifact;
    if (typeof d === 'string' && d !== '') {
      const entry = artifacts.find((a) => a?.name === d);
      const field = inf.driver ? 'inference.driver.artifact' : 'inference.provider.artifact';
      if (!entry) {
        const drivers = artifacts.filter((a) => a?.runtime === 'driver').map((a) => a!.name);
        add('E-MAN-014', field, at(field), `${field} '${d}' is not declared in artifacts`, drivers.length ? `use one of the declared drivers (${drivers.join(', ')}), or add an artifact '${d}' with runtime: driver` : `add an entry to artifacts: {name: ${d}, version: <version>, runtime: driver}`);
      } else if (entry.runtime !== 'driver') {
        add('E-MAN-014', field, at(field), `${field} '${d}' names an artifact with runtime '${entry.runtime}', not 'driver'`, `set runtime: driver on artifact '${d}', or name a driver artifact`);
      }
    }
  }
}

function exclusive(w: WalkResult, base: string, add: (code: string, field: string, p: Position, message: string, hint: string) => void, keyAt: Loc): void {
  const a = `${base}.system_prompt`;
  const b = `${base}.system_prompt_file`;
  if (w.keyLocs.has(a) && w.keyLocs.has(b)) {
    add('E-MAN-012', b, keyAt(b), `'${base}' sets both system_prompt and system_prompt_file; they are mutually exclusive`, 'keep one: inline the text in system_prompt, or keep it in the file named by system_prompt_file');
  }
}

function narrowingChecks(
  c: ArtifactCapabilities,
  ceiling: Capabilities,
  base: string,
  at: Loc,
  add: (code: string, field: string, p: Position, message: string, hint: string) => void,
): void {
  const widen = (field: string, what: string, hint: string) =>
    add('E-MAN-016', field, at(field), `${base}.capabilities widens the capsule grant: ${what}`, hint);
  const p = `${base}.capabilities`;
  const ceilEntries = (ceiling?.network?.allow ?? []).filter((e): e is string => typeof e === 'string').map((e) => parseNetworkEntry(e)).filter((e): e is NetworkEntry => !isProblem(e));
  (c.network?.allow ?? []).forEach((e, i) => {
    if (typeof e !== 'string') return;
    const pe = parseNetworkEntry(e);
    if (isProblem(pe)) return;
    if (!ceilEntries.some((ce) => networkCovers(ce, pe))) {
      widen(`${p}.network.allow[${i}]`, `'${e}' is not covered by capabilities.network.allow`, `add '${e}' to the capsule-wide capabilities.network.allow, or remove it here (a per-artifact grant can only narrow)`);
    }
  });
  const scope = c.filesystem?.scope;
  if (typeof scope === 'string' && ceiling?.filesystem?.scope && !scopeCovers(ceiling.filesystem.scope, scope)) {
    widen(`${p}.filesystem.scope`, `scope '${scope}' is outside capabilities.filesystem.scope '${ceiling.filesystem.scope}'`, `use '${ceiling.filesystem.scope}' or a directory beneath it`);
  }
  (c.shell?.allow ?? []).forEach((b, i) => {
    if (typeof b === 'string' && !(ceiling?.shell?.allow ?? []).includes(b)) {
      widen(`${p}.shell.allow[${i}]`, `binary '${b}' is not in capabilities.shell.allow`, `add '${b}' to capabilities.shell.allow, or remove it here`);
    }
  });
  (c.env?.allow ?? []).forEach((n, i) => {
    if (typeof n === 'string' && !(ceiling?.env?.allow ?? []).includes(n)) {
      widen(`${p}.env.allow[${i}]`, `env var '${n}' is not in capabilities.env.allow`, `add '${n}' to capabilities.env.allow, or remove it here`);
    }
  });
  const lim = c.limits ?? {};
  for (const [k, snake] of [['memoryBytes', 'memory_bytes'], ['deadlineSeconds', 'deadline_seconds'], ['hookDeadlineSeconds', 'hook_deadline_seconds']] as const) {
    const mine = lim[k];
    const cap = ceiling?.limits?.[k];
    if (typeof mine === 'number' && typeof cap === 'number' && mine > cap) {
      widen(`${p}.limits.${snake}`, `limits.${snake} ${mine} exceeds the capsule's ${cap}`, `use a value <= ${cap}, or raise capabilities.limits.${snake}`);
    }
  }
}

function fileChecks(w: WalkResult, dir: string, file: string, errors: ErrorCollector): void {
  for (const field of ['inference.system_prompt_file', 'inference.compaction.system_prompt_file']) {
    const p = w.locs.get(field);
    if (!p) continue;
    const rel = field === 'inference.system_prompt_file'
      ? (w.value as unknown as CapsuleManifest).inference?.systemPromptFile
      : (w.value as unknown as CapsuleManifest).inference?.compaction?.systemPromptFile;
    if (typeof rel !== 'string') continue;
    const target = path.join(dir, rel);
    const problem = checkBoundedFile(target, promptFileBound(rel, target));
    const at = { file, line: p.line, column: p.column, field };
    if (problem === 'missing') {
      errors.add('E-MAN-022', `${field.split('.').pop()} '${rel}' does not exist (looked for ${target})`, `create the file, or fix the path (it is relative to ${dir})`, at);
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
    ...(decl?.shell ? { shell: { allow: decl.shell.allow, stripEnv: [...new Set([...(ceil.shell?.stripEnv ?? []), ...(decl.shell.stripEnv ?? [])])] } } : ceil.shell && !hook ? { shell: { allow: [...ceil.shell.allow], stripEnv: [...ceil.shell.stripEnv] } } : {}),
    env: { allow: decl?.env?.allow ?? (hook ? [] : [...ceil.env.allow]) },
    limits: { ...ceil.limits, ...(decl?.limits ?? {}) },
  };
}
