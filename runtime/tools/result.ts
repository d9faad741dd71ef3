/**
 * Validation of an untrusted `murmur:tool/run` `tool-result` (wit-interfaces.md "murmur:tool/run"):
 *
 *   record tool-result { status: passed|failed|error, summary: option<string>, data: option<string>,
 *                        data-path: option<string>, truncated: bool,
 *                        metadata: list<tuple<string,string>> }
 *
 * Accepts the value as jco lifts it (`dataPath`, options as `undefined`) and as JSON from a native
 * tool (`data-path` or `data_path`, options as `null`). The reserved metadata keys are extracted:
 *
 * | key               | value                   | kept as            |
 * |-------------------|-------------------------|--------------------|
 * | `continuation_id` | opaque id ("" = drop)   | `continuationId`   |
 * | `state_effect`    | `read` or `mutate`      | `stateEffect`      |
 * | `resource_id`     | opaque, byte-compared   | `resourceId`       |
 *
 * A reserved key with a bad value (a `state_effect` other than read/mutate) is not an error: it is
 * left out ("unknown") and reported in `warnings`. When a key repeats, the last value wins.
 */
import { MurError } from '../errors.ts';

export const TOOL_STATUSES = ['passed', 'failed', 'error'] as const;
export type ToolStatus = (typeof TOOL_STATUSES)[number];
export type StateEffect = 'read' | 'mutate';
export const RESERVED_METADATA_KEYS = ['continuation_id', 'state_effect', 'resource_id'] as const;

export interface ToolResult {
  status: ToolStatus;
  summary?: string;
  data?: string;
  dataPath?: string;
  truncated: boolean;
  /** Every metadata pair, reserved ones included, in order. */
  metadata: [string, string][];
  /** `continuation_id` as returned; `""` is kept (it means "drop the held id"). */
  continuationId?: string;
  stateEffect?: StateEffect;
  resourceId?: string;
  /** Non-fatal oddities (a bad reserved value), for a log line. */
  warnings: string[];
}

function malformed(message: string, field: string, hint: string): MurError {
  return new MurError('E-TOOL-001', `malformed tool result: ${message}`, { hint, location: { field } });
}

function optString(obj: Record<string, unknown>, names: readonly string[]): string | undefined {
  const present = names.filter((n) => obj[n] !== undefined && obj[n] !== null);
  if (present.length > 1) {
    throw malformed(`both ${present.map((p) => JSON.stringify(p)).join(' and ')} are set`, names[0]!, 'set the field once');
  }
  const name = present[0];
  if (name === undefined) return undefined;
  const v = obj[name];
  if (typeof v !== 'string') throw malformed(`${name} must be a string, got ${typeof v}`, name, `${name} is option<string>`);
  return v;
}

export function parseToolResult(raw: unknown): ToolResult {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw malformed(
      `expected a record, got ${raw === null ? 'null' : Array.isArray(raw) ? 'an array' : typeof raw}`,
      'tool-result',
      'a tool returns {status, summary?, data?, data-path?, truncated, metadata}',
    );
  }
  const o = raw as Record<string, unknown>;
  if (!(TOOL_STATUSES as readonly unknown[]).includes(o.status)) {
    throw malformed(`status is ${JSON.stringify(o.status)}; expected passed, failed or error`, 'status', 'status is the enum {passed, failed, error}');
  }
  const out: ToolResult = { status: o.status as ToolStatus, truncated: false, metadata: [], warnings: [] };
  const summary = optString(o, ['summary']);
  if (summary !== undefined) out.summary = summary;
  const data = optString(o, ['data']);
  if (data !== undefined) out.data = data;
  const dataPath = optString(o, ['dataPath', 'data-path', 'data_path']);
  if (dataPath !== undefined) out.dataPath = dataPath;
  if (o.truncated !== undefined && o.truncated !== null) {
    if (typeof o.truncated !== 'boolean') throw malformed(`truncated must be a boolean, got ${typeof o.truncated}`, 'truncated', 'truncated is a bool');
    out.truncated = o.truncated;
  }
  if (o.metadata !== undefined && o.metadata !== null) {
    if (!Array.isArray(o.metadata)) throw malformed('metadata must be a list of [key, value] pairs', 'metadata', 'metadata is list<tuple<string,string>>');
    o.metadata.forEach((pair, i) => {
      if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string' || typeof pair[1] !== 'string') {
        throw malformed(`metadata[${i}] is not a [string, string] pair`, `metadata[${i}]`, 'metadata is list<tuple<string,string>>');
      }
      const [k, v] = pair as [string, string];
      out.metadata.push([k, v]);
      if (k === 'continuation_id') out.continuationId = v;
      else if (k === 'resource_id') {
        if (v === '') {
          delete out.resourceId;
          out.warnings.push('resource_id is empty; the call is recorded without one');
        } else out.resourceId = v;
      } else if (k === 'state_effect') {
        if (v === 'read' || v === 'mutate') out.stateEffect = v;
        else {
          delete out.stateEffect;
          out.warnings.push(`state_effect ${JSON.stringify(v)} is neither "read" nor "mutate"; the call counts as unknown`);
        }
      }
    });
  }
  return out;
}
