/**
 * Which component is a script capsule's own, and the grant it runs under.
 *
 * A script capsule (a manifest with no `inference:` block) has exactly one capsule component, the
 * component exporting `murmur:capsule/run@0.1.0`. It is declared one of two ways:
 *
 *  1. **As an artifact named exactly like the capsule** (`artifacts: [{name: <capsule name>,
 *     version, runtime: tool}]`). Preferred: it is resolved from the registry, hash-verified and
 *     pinned in `murmur.lock` like every other artifact, and an optional per-artifact
 *     `capabilities:` block narrows its grant.
 *  2. **As a file in the capsule folder** (the reference runtime's convention): `capsule.wasm`, or
 *     the only root `*.wasm`. It is not registry-verified (its SHA-256 is recorded on
 *     `session_start`) and runs under the capsule-wide capabilities.
 *
 * Both at once, neither, several root `*.wasm` without a `capsule.wasm`, an artifact of another
 * runtime, or a component that does not export `murmur:capsule/run` are refused (E-SCRIPT-001..004)
 * before anything runs.
 */
import path from 'node:path';
import { MurError } from '../errors.ts';
import { CAPSULE_FILE, capsuleFileChoice, rootWasm } from './capsule-file.ts';
import { fileDigest } from '../host/file-digest.ts';
import { loadComponent, type LoadedComponent } from '../host/transpile-cache.ts';
import { effectiveCapabilities, type EffectiveGrant } from '../manifest/capsule.ts';
import { networkCovers, parseNetworkEntry, isProblem, scopeCovers, type NetworkEntry } from '../manifest/checks.ts';
import type { StagedArtifact, StagedCapsule } from '../session/stage.ts';

export const CAPSULE_EXPORT = 'murmur:capsule/run@0.1.0';
export { CAPSULE_FILE };

export interface CapsuleComponent {
  /** Display name: the capsule's name. */
  name: string;
  wasmPath: string;
  /** `artifact`: the registry artifact named like the capsule; `file`: a .wasm in the capsule folder. */
  origin: 'artifact' | 'file';
  /** SHA-256 of the component bytes. */
  sha256: string;
  /** The staged artifact, when declared as one. */
  artifact?: StagedArtifact;
  /** The capsule component's grant (the capsule-wide one, narrowed by its own artifact entry). */
  grant: EffectiveGrant;
  component: LoadedComponent;
}

/** Finds, loads and checks the capsule component of a staged script capsule. */
export async function findCapsuleComponent(staged: StagedCapsule): Promise<CapsuleComponent> {
  const m = staged.manifest;
  const file = m.file;
  const art = staged.artifacts.find((a) => a.name === m.name && a.origin !== 'pull');
  const wasmFiles = rootWasm(staged.capsuleDir);
  const fileChoice = capsuleFileChoice(wasmFiles);

  if (art && fileChoice) {
    throw new MurError(
      'E-SCRIPT-002',
      `script capsule '${m.name}' has two capsule components: the artifact '${m.name}' and ${fileChoice} in ${staged.capsuleDir}`,
      {
        hint: `keep one: remove ${fileChoice} from the capsule folder, or remove the '${m.name}' entry from artifacts`,
        location: { file },
      },
    );
  }
  let wasmPath: string;
  let origin: CapsuleComponent['origin'];
  if (art) {
    if (art.runtime !== 'tool' || !art.wasmPath) {
      throw new MurError('E-SCRIPT-004', `artifact '${m.name}' (named like the capsule, so taken as its capsule component) has runtime '${art.runtime}'`, {
        hint: `publish the capsule component with runtime: tool, or rename the ${art.runtime} artifact`,
        location: { file, field: `artifacts[${m.artifacts.findIndex((e) => e.name === m.name)}]` },
      });
    }
    wasmPath = art.wasmPath;
    origin = 'artifact';
  } else if (fileChoice) {
    wasmPath = path.join(staged.capsuleDir, fileChoice);
    origin = 'file';
  } else if (wasmFiles.length > 1) {
    throw new MurError('E-SCRIPT-002', `script capsule '${m.name}' has several root .wasm files (${wasmFiles.join(', ')}) and none is ${CAPSULE_FILE}`, {
      hint: `name the capsule component ${CAPSULE_FILE}, or declare it as an artifact named '${m.name}'`,
      location: { file: staged.capsuleDir },
    });
  } else {
    throw new MurError('E-SCRIPT-001', `script capsule '${m.name}' has no capsule component`, {
      hint: `a capsule without an inference: block runs a component exporting ${CAPSULE_EXPORT}: declare it as an artifact named '${m.name}' (runtime: tool), or put it in the capsule folder as ${CAPSULE_FILE}`,
      location: { file },
    });
  }
  // Known already when transpileAhead hashed this file at start: not read a second time (host/file-digest.ts).
  const sha256 = fileDigest(wasmPath);
  const component = await loadComponent(wasmPath, { name: m.name, sha256 });
  if (!component.exports.includes(CAPSULE_EXPORT)) {
    const exported = component.exports.filter((e) => e.includes(':'));
    throw new MurError(
      'E-SCRIPT-003',
      `the capsule component of '${m.name}' (${origin === 'artifact' ? `artifact '${m.name}'` : path.basename(wasmPath)}) does not export ${CAPSULE_EXPORT}${exported.length ? ` (it exports ${exported.join(', ')})` : ''}`,
      {
        hint: `build it against the murmur:runtime-guest/capsule world; a tool component (murmur:tool/run) cannot be a capsule`,
        location: { file: wasmPath },
      },
    );
  }
  return {
    name: m.name,
    wasmPath,
    origin,
    sha256,
    ...(art ? { artifact: art } : {}),
    grant: art ? art.grant : effectiveCapabilities(m, m.name),
    component,
  };
}

function entries(allow: readonly string[]): { raw: string; e: NetworkEntry }[] {
  const out: { raw: string; e: NetworkEntry }[] = [];
  for (const raw of allow) {
    const e = parseNetworkEntry(raw);
    if (!isProblem(e)) out.push({ raw, e });
  }
  return out;
}

/**
 * A tool's grant, never wider than the capsule component's: network entries the capsule's allow
 * does not cover are dropped, a scope outside the capsule's becomes the capsule's, env names the
 * capsule may not see are dropped, limits are the smaller of the two.
 */
export function clampGrant(tool: EffectiveGrant, ceiling: EffectiveGrant): EffectiveGrant {
  const ceil = entries(ceiling.network.allow);
  const network = entries(tool.network.allow)
    .filter(({ e }) => ceil.some((c) => networkCovers(c.e, e)))
    .map(({ raw }) => raw);
  let scope: string | null = tool.filesystem.scope;
  if (ceiling.filesystem.scope === null) scope = null;
  else if (scope !== null && !scopeCovers(ceiling.filesystem.scope, scope)) scope = ceiling.filesystem.scope;
  const shell =
    tool.shell && ceiling.shell
      ? { allow: tool.shell.allow.filter((b) => ceiling.shell!.allow.includes(b)), stripEnv: [...new Set([...tool.shell.stripEnv, ...ceiling.shell.stripEnv])] }
      : undefined;
  return {
    network: { allow: network },
    filesystem: { scope },
    ...(shell ? { shell } : {}),
    env: { allow: tool.env.allow.filter((n) => ceiling.env.allow.includes(n)) },
    limits: {
      memoryBytes: Math.min(tool.limits.memoryBytes, ceiling.limits.memoryBytes),
      deadlineSeconds: Math.min(tool.limits.deadlineSeconds, ceiling.limits.deadlineSeconds),
      hookDeadlineSeconds: Math.min(tool.limits.hookDeadlineSeconds, ceiling.limits.hookDeadlineSeconds),
    },
  };
}
