/**
 * The redundant-call detector behind `mur trace` (wit-interfaces.md "murmur:tool/run"): a call is
 * a **redundant read** when it reads a resource that an earlier successful read already read, with
 * nothing in between that may have changed it.
 *
 * - Resource: the call's `resource_id` when it declared one (two calls address the same resource
 *   when the values are byte-equal); otherwise a guess from the first path-like input field among
 *   `path`, `file`, `file_path`, `filepath`, `filename` (normalised: `./a//b` = `a/b`). The two
 *   namespaces never collide (`id:` vs `path:` keys).
 * - Effect: the call's `state_effect` (`read` | `mutate`). A call that omits it is **unknown**: it is
 *   never credited as a redundant read, and — because it may have changed what it touched — it
 *   ends the clean-read streak of its resource.
 * - A `mutate` ends the streak of its resource. A failed read (`status` other than ok/passed)
 *   neither starts nor extends a streak.
 * - A mutating or unknown call with no resource at all may have touched anything: it ends every
 *   streak (set `unscopedInvalidatesAll: false` to ignore such calls).
 */
import path from 'node:path';

export const PATH_LIKE_FIELDS = ['path', 'file', 'file_path', 'filepath', 'filename'] as const;

/** The fields of a `tool_call` trace event the detector reads. */
export interface ToolCallRecord {
  turn?: number;
  tool_name: string;
  /** The call's input: an object, or its JSON text. */
  input?: unknown;
  state_effect?: string;
  resource_id?: string;
  /** `ok` / `error` on trace events (`passed` also accepted); absent = ok. */
  status?: string;
}

export interface CallResource {
  key: string;
  source: 'resource_id' | `input.${(typeof PATH_LIKE_FIELDS)[number]}`;
  value: string;
}

export interface RedundantCall {
  /** Index of the redundant call in the input list. */
  index: number;
  turn?: number;
  toolName: string;
  resource: CallResource;
  /** Index of the earlier read it repeats. */
  previousIndex: number;
}

export interface RedundancyReport {
  calls: number;
  reads: number;
  mutates: number;
  unknown: number;
  redundant: RedundantCall[];
}

function inputObject(input: unknown): Record<string, unknown> | undefined {
  let v = input;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return undefined;
    }
  }
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** The resource a call addressed, or `undefined` when it named none. */
export function callResource(call: ToolCallRecord): CallResource | undefined {
  if (typeof call.resource_id === 'string' && call.resource_id !== '') {
    return { key: `id:${call.resource_id}`, source: 'resource_id', value: call.resource_id };
  }
  const input = inputObject(call.input);
  if (input === undefined) return undefined;
  for (const f of PATH_LIKE_FIELDS) {
    const v = input[f];
    if (typeof v === 'string' && v.trim() !== '') {
      let norm = path.posix.normalize(v.trim().replace(/\\/g, '/'));
      if (norm.length > 1 && norm.endsWith('/')) norm = norm.slice(0, -1);
      return { key: `path:${norm}`, source: `input.${f}`, value: v };
    }
  }
  return undefined;
}

export function callEffect(call: ToolCallRecord): 'read' | 'mutate' | 'unknown' {
  return call.state_effect === 'read' || call.state_effect === 'mutate' ? call.state_effect : 'unknown';
}

export function findRedundantCalls(calls: readonly ToolCallRecord[], opts: { unscopedInvalidatesAll?: boolean } = {}): RedundancyReport {
  const unscopedInvalidatesAll = opts.unscopedInvalidatesAll ?? true;
  const lastRead = new Map<string, number>();
  const report: RedundancyReport = { calls: calls.length, reads: 0, mutates: 0, unknown: 0, redundant: [] };
  calls.forEach((call, index) => {
    const effect = callEffect(call);
    if (effect === 'read') report.reads++;
    else if (effect === 'mutate') report.mutates++;
    else report.unknown++;
    const resource = callResource(call);
    if (resource === undefined) {
      if (effect !== 'read' && unscopedInvalidatesAll) lastRead.clear();
      return;
    }
    if (effect !== 'read') {
      lastRead.delete(resource.key);
      return;
    }
    const ok = call.status === undefined || call.status === 'ok' || call.status === 'passed';
    if (!ok) return;
    const prev = lastRead.get(resource.key);
    if (prev !== undefined) {
      const r: RedundantCall = { index, toolName: call.tool_name, resource, previousIndex: prev };
      if (call.turn !== undefined) r.turn = call.turn;
      report.redundant.push(r);
    }
    lastRead.set(resource.key, index);
  });
  return report;
}
