/**
 * `mur serve` and `mur run`, right after staging: every component the capsule will load that is
 * not transpiled yet is transpiled now, in this process, before the command imports the server,
 * the store, the agent loop or the script host (host/transpile-ahead.ts says why: a first run's
 * peak memory). From a warm cache this is a stat and a hash per component.
 */
import { join } from 'node:path';
import { transpileAhead, type AheadComponent, type AheadResult } from '../host/transpile-ahead.ts';
import { capsuleFileChoice, rootWasm } from '../script/capsule-file.ts';
import type { StagedCapsule } from '../session/stage.ts';

/** The components a staged capsule loads: its driver, tools and hooks, and a script capsule's own component. */
export function stagedComponents(staged: StagedCapsule): AheadComponent[] {
  const out: AheadComponent[] = [];
  for (const a of staged.artifacts) {
    if (!a.wasmPath) continue;
    out.push({
      name: a.name,
      path: a.wasmPath,
      ...(a.wasmSha256 ? { sha256: a.wasmSha256 } : {}),
      ...(a.wasmIdentity ? { unchangedSince: a.wasmIdentity } : {}),
    });
  }
  for (const h of staged.hooks) out.push({ name: h.name, path: h.wasmPath });
  const m = staged.manifest;
  // A script capsule's component may be a file of its folder rather than an artifact (script/capsule.ts).
  if (m.kind === 'script' && !staged.artifacts.some((a) => a.name === m.name)) {
    const file = capsuleFileChoice(rootWasm(staged.capsuleDir));
    if (file) out.push({ name: m.name, path: join(staged.capsuleDir, file) });
  }
  return out;
}

/** Transpiles what `staged` needs and is not cached; one line says so when anything was (`out`). */
export async function transpileFirst(staged: StagedCapsule, out?: (s: string) => void): Promise<AheadResult> {
  const t0 = performance.now();
  const r = await transpileAhead(stagedComponents(staged));
  if (out && r.transpiled.length + r.refused.length > 0) {
    const refused = r.refused.length ? `; refused: ${r.refused.join(', ')} (their load says why)` : '';
    out(`transpiled ${r.transpiled.join(', ') || 'nothing'} before start, in this process (${((performance.now() - t0) / 1000).toFixed(2)} s)${refused}`);
  }
  return r;
}
