/**
 * The capsule manifest's checks across fields (E-MAN-002/004/012-016/020 and the MCP block's),
 * run on the walked YAML after the schema rows: what one row alone cannot say.
 */
import { CONTRACT_FIELDS, checkHookContract } from '../contracts/commit-table.ts';
import type { ArtifactCapabilities, ArtifactEntry, Capabilities, CapsuleManifest, Inference } from './capsule-types.ts';
import { contractHint } from './artifact.ts';
import { isProblem, networkCovers, parseNetworkEntry, scopeCovers, type NetworkEntry } from './checks.ts';
import type { ErrorCollector } from './errors.ts';
import { mcpChecks } from './mcp.ts';
import type { Position, WalkResult } from './validate.ts';

type Loc = (field: string) => Position;
type Add = (code: string, field: string, p: Position, message: string, hint: string) => void;
/** What every check reads and reports through. */
interface Ctx {
  w: WalkResult;
  v: CapsuleManifest;
  at: Loc;
  keyAt: Loc;
  add: Add;
}

/** The checks across fields that the schema rows cannot express: duplicates, exclusive keys, references, narrowing. */
export function semanticChecks(w: WalkResult, file: string, errors: ErrorCollector): void {
  const v = w.value as unknown as CapsuleManifest;
  const at: Loc = (field) => w.locs.get(field) ?? w.keyLocs.get(field) ?? { line: 1, column: 1 };
  const keyAt: Loc = (field) => w.keyLocs.get(field) ?? at(field);
  const add: Add = (code, field, p, message, hint) => errors.add(code, message, hint, { file, line: p.line, column: p.column, field });
  const c: Ctx = { w, v, at, keyAt, add };

  const seen = new Map<string, number>();
  const artifacts = (v.artifacts ?? []) as (ArtifactEntry | undefined)[];
  for (const [i, a] of artifacts.entries()) artifactEntryChecks(c, a, i, seen);

  mcpChecks(
    v.mcp,
    v.capabilities?.network?.allow ?? [],
    v.capabilities?.shell?.allow ?? [],
    (code, field, message, hint) =>
      add(code, field, w.locs.has(field) || w.keyLocs.has(field) ? at(field) : keyAt(field.replace(/\.[a-z_]+$/, '')), message, hint),
    (f) => w.keyLocs.has(f),
  );

  if (v.inference) inferenceChecks(c, v.inference, artifacts);
}

/** One artifact entry's checks: a unique name, its source or version, hook-only keys, its grant. */
function artifactEntryChecks(c: Ctx, a: ArtifactEntry | undefined, i: number, seen: Map<string, number>): void {
  const { w, v, at, keyAt, add } = c;
  if (!a || typeof a.name !== 'string') return;
  const base = `artifacts[${i}]`;
  const first = seen.get(a.name);
  if (first !== undefined) {
    add(
      'E-MAN-013',
      `${base}.name`,
      at(`${base}.name`),
      `duplicate artifact name '${a.name}' (first declared at artifacts[${first}], line ${at(`artifacts[${first}].name`).line})`,
      'give every artifact a unique name, or remove the duplicate entry',
    );
  } else seen.set(a.name, i);
  const src = a.source as { url?: string; sha256?: string; oci?: string } | undefined;
  if (src) {
    if (src.oci !== undefined && (src.url !== undefined || src.sha256 !== undefined)) {
      add(
        'E-MAN-012',
        `${base}.source`,
        at(`${base}.source`),
        `artifact '${a.name}' gives both source.oci and source.url/sha256`,
        'keep one: `source: {oci: <registry>/<repo>:<tag>@sha256:<hex>}` or `source: {url: <url>, sha256: <hex>}`',
      );
    } else if (
      src.oci === undefined &&
      !w.keyLocs.has(`${base}.source.oci`) &&
      ((src.url === undefined && !w.keyLocs.has(`${base}.source.url`)) || (src.sha256 === undefined && !w.keyLocs.has(`${base}.source.sha256`)))
    ) {
      const missing = src.url === undefined ? 'url' : 'sha256';
      // A key that is present but invalid has its own error already.
      add(
        'E-MAN-002',
        `${base}.source.${missing}`,
        at(`${base}.source`),
        `missing required field '${missing}' in source of artifact '${a.name}'`,
        'give `source: {url: <http(s) url>, sha256: <64 hex>}`, or `source: {oci: <registry>/<repo>:<tag>@sha256:<hex>}`',
      );
    }
  }
  if (a.version === undefined && a.source === undefined && !w.keyLocs.has(`${base}.version`)) {
    add(
      'E-MAN-002',
      `${base}.version`,
      at(base),
      `missing required field 'version' in artifact '${a.name}'`,
      "add `version:` with the exact version to stage from the registry (e.g. version: '1.0.0'), or give a remote `source: {url, sha256}`",
    );
  }
  if (a.onOverflow !== undefined && a.runtime !== 'hook') {
    add(
      'E-MAN-015',
      `${base}.on_overflow`,
      keyAt(`${base}.on_overflow`),
      `'on_overflow' applies to hooks only; artifact '${a.name}' has runtime '${a.runtime}'`,
      'remove `on_overflow:`, or set `runtime: hook` if this artifact is a hook',
    );
  }
  const contractKeys = CONTRACT_FIELDS.filter((k) => w.keyLocs.has(`${base}.${k}`));
  if (contractKeys.length && a.runtime !== 'hook') {
    for (const k of contractKeys)
      add(
        'E-MAN-015',
        `${base}.${k}`,
        keyAt(`${base}.${k}`),
        `'${k}' applies to hooks only; artifact '${a.name}' has runtime '${a.runtime}'`,
        `remove \`${k}:\`, or set \`runtime: hook\` if this artifact is a hook`,
      );
  } else if (
    contractKeys.length &&
    contractKeys.every((k) => a[k === 'binding' ? 'binding' : k === 'execution_mode' ? 'executionMode' : 'commitPolicy'] !== undefined)
  ) {
    // The same table check as an artifact's own manifest (E-MAN-020), here at the capsule entry.
    const violation = checkHookContract({ binding: a.binding, execution_mode: a.executionMode, commit_policy: a.commitPolicy });
    if (violation) {
      const f = `${base}.${violation.field}`;
      add(
        'E-MAN-020',
        f,
        w.keyLocs.has(f) ? at(f) : keyAt(base),
        `hook contract violation in artifact '${a.name}': ${violation.message}`,
        contractHint(violation.field, a.binding, a.commitPolicy),
      );
    }
  }
  if (a.capabilities !== undefined && a.runtime === 'skill') {
    add(
      'E-MAN-015',
      `${base}.capabilities`,
      keyAt(`${base}.capabilities`),
      `skill '${a.name}' cannot carry capabilities; a skill runs no code`,
      'remove the `capabilities:` block from this entry',
    );
  } else if (a.capabilities) {
    narrowingChecks(a.capabilities, v.capabilities, base, at, add);
  }
}

/** The `inference` block's checks: transport, exclusive and older spellings, the driver it names. */
function inferenceChecks(c: Ctx, inf: Inference, artifacts: (ArtifactEntry | undefined)[]): void {
  const { w, v, at, keyAt, add } = c;
  if ((inf as { transport?: string }).transport === 'process') {
    add(
      'E-MAN-004',
      'inference.transport',
      at('inference.transport'),
      "inference.transport 'process' (a Claude Code / Codex subprocess) is not supported: inference here always runs through the capsule's driver component",
      'remove `transport: process` (or write `transport: http`) and name a driver: `inference: {driver: {artifact: <driver>}, model: <model>, endpoint: <url>}` with an artifact `{name: <driver>, version: <v>, runtime: driver}`',
    );
  }
  exclusive(w, 'inference', add, keyAt);
  exclusive(w, 'inference.compaction', add, keyAt);
  const provider = (inf as { provider?: { artifact?: string } }).provider;
  if (!w.keyLocs.has('inference.driver') && !w.keyLocs.has('inference.provider')) {
    add(
      'E-MAN-002',
      'inference.driver',
      keyAt('inference'),
      "missing required field 'driver' in 'inference'",
      'add `driver: {artifact: <name of an artifact with runtime: driver>}` under `inference:`',
    );
  } else if (w.keyLocs.has('inference.driver') && w.keyLocs.has('inference.provider')) {
    add(
      'E-MAN-012',
      'inference.provider',
      keyAt('inference.provider'),
      "'inference' sets both driver and provider (the reference runtime's older spelling of driver)",
      'keep `driver:` and remove `provider:`',
    );
  }
  const reopens = (inf as { maxTaskReopens?: unknown }).maxTaskReopens;
  if (typeof reopens === 'number' && w.keyLocs.has('lifecycle.max_task_reopens') && reopens !== v.lifecycle?.maxTaskReopens) {
    add(
      'E-MAN-012',
      'inference.max_task_reopens',
      keyAt('inference.max_task_reopens'),
      `inference.max_task_reopens (${reopens}, the reference runtime's v0.2 spelling) disagrees with lifecycle.max_task_reopens (${String(v.lifecycle?.maxTaskReopens)})`,
      'keep one: `lifecycle.max_task_reopens`',
    );
  }
  const d = (inf.driver ?? provider)?.artifact;
  if (typeof d === 'string' && d !== '') {
    const entry = artifacts.find((a) => a?.name === d);
    const field = inf.driver ? 'inference.driver.artifact' : 'inference.provider.artifact';
    if (!entry) {
      const drivers = artifacts.filter((a) => a?.runtime === 'driver').map((a) => a!.name);
      add(
        'E-MAN-014',
        field,
        at(field),
        `${field} '${d}' is not declared in artifacts`,
        drivers.length
          ? `use one of the declared drivers (${drivers.join(', ')}), or add an artifact '${d}' with runtime: driver`
          : `add an entry to artifacts: {name: ${d}, version: <version>, runtime: driver}`,
      );
    } else if (entry.runtime !== 'driver') {
      add(
        'E-MAN-014',
        field,
        at(field),
        `${field} '${d}' names an artifact with runtime '${entry.runtime}', not 'driver'`,
        `set runtime: driver on artifact '${d}', or name a driver artifact`,
      );
    }
  }
}

function exclusive(w: WalkResult, base: string, add: Add, keyAt: Loc): void {
  const a = `${base}.system_prompt`;
  const b = `${base}.system_prompt_file`;
  if (w.keyLocs.has(a) && w.keyLocs.has(b)) {
    add(
      'E-MAN-012',
      b,
      keyAt(b),
      `'${base}' sets both system_prompt and system_prompt_file; they are mutually exclusive`,
      'keep one: inline the text in system_prompt, or keep it in the file named by system_prompt_file',
    );
  }
}

function narrowingChecks(c: ArtifactCapabilities, ceiling: Capabilities, base: string, at: Loc, add: Add): void {
  const widen = (field: string, what: string, hint: string) =>
    add('E-MAN-016', field, at(field), `${base}.capabilities widens the capsule grant: ${what}`, hint);
  const p = `${base}.capabilities`;
  const ceilEntries = (ceiling?.network?.allow ?? [])
    .filter((e): e is string => typeof e === 'string')
    .map((e) => parseNetworkEntry(e))
    .filter((e): e is NetworkEntry => !isProblem(e));
  (c.network?.allow ?? []).forEach((e, i) => {
    if (typeof e !== 'string') return;
    const pe = parseNetworkEntry(e);
    if (isProblem(pe)) return;
    if (!ceilEntries.some((ce) => networkCovers(ce, pe))) {
      widen(
        `${p}.network.allow[${i}]`,
        `'${e}' is not covered by capabilities.network.allow`,
        `add '${e}' to the capsule-wide capabilities.network.allow, or remove it here (a per-artifact grant can only narrow)`,
      );
    }
  });
  const scope = c.filesystem?.scope;
  if (typeof scope === 'string' && ceiling?.filesystem?.scope && !scopeCovers(ceiling.filesystem.scope, scope)) {
    widen(
      `${p}.filesystem.scope`,
      `scope '${scope}' is outside capabilities.filesystem.scope '${ceiling.filesystem.scope}'`,
      `use '${ceiling.filesystem.scope}' or a directory beneath it`,
    );
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
  for (const [k, snake] of [
    ['memoryBytes', 'memory_bytes'],
    ['deadlineSeconds', 'deadline_seconds'],
    ['hookDeadlineSeconds', 'hook_deadline_seconds'],
  ] as const) {
    const mine = lim[k];
    const cap = ceiling?.limits?.[k];
    if (typeof mine === 'number' && typeof cap === 'number' && mine > cap) {
      widen(`${p}.limits.${snake}`, `limits.${snake} ${mine} exceeds the capsule's ${cap}`, `use a value <= ${cap}, or raise capabilities.limits.${snake}`);
    }
  }
}
