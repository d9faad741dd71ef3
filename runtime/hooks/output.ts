/**
 * What a hook handler call came back as: the return value read as a `hook-output` variant (jco's
 * `{tag, val}`), or the failure the call ended in, classified (the `arm` a `hook_dispatch_error`
 * records and a phrase for the log). Pure: no component, no bus.
 */
import { DeadlineExceeded, GuestError, GuestTrap, HostFault, MemoryLimitExceeded } from '../host/index.ts';
import { ARMS, type Arm } from '../contracts/commit-table.ts';
import type { HookMessage, HookOutput, ToolManifest } from './types.ts';

/** Why a handler call produced no readable output. `arm` is what `hook_dispatch_error` records. */
export interface CallFailure {
  ok: false;
  arm: 'error' | 'trap' | 'deadline' | 'memory' | 'unreadable' | 'fault';
  /** Phrase completing "hook 'x' …", e.g. "returned err: boom". */
  defect: string;
}
export type CallResult = { ok: true; out: HookOutput } | CallFailure;

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function optString(v: unknown): boolean {
  return v === undefined || v === null || typeof v === 'string';
}

/** Reads a handler's return value as a `hook-output`; a string says why it cannot be read. */
export function readHookOutput(v: unknown): HookOutput | string {
  if (!isRecord(v) || typeof v.tag !== 'string') return `expected a hook-output variant, got ${describe(v)}`;
  const tag = v.tag;
  if (!(ARMS as readonly string[]).includes(tag)) return `unknown hook-output arm '${tag}'`;
  switch (tag as Arm) {
    case 'none':
      return { tag: 'none' };
    case 'artifact':
    case 'reopen-task':
    case 'deny':
      if (typeof v.val !== 'string') return `arm '${tag}' carries ${describe(v.val)}, expected a string`;
      return { tag, val: v.val } as HookOutput;
    case 'replace-context':
    case 'seed-context': {
      if (!Array.isArray(v.val)) return `arm '${tag}' carries ${describe(v.val)}, expected a list of messages`;
      const msgs: HookMessage[] = [];
      for (const [i, m] of v.val.entries()) {
        if (!isRecord(m) || typeof m.role !== 'string' || typeof m.content !== 'string' || !optString(m.id) || !optString(m.sourceId)) {
          return `arm '${tag}' message ${i} is not a {role, content} record`;
        }
        const out: HookMessage = { role: m.role, content: m.content };
        if (typeof m.id === 'string') out.id = m.id;
        if (typeof m.sourceId === 'string') out.sourceId = m.sourceId;
        msgs.push(out);
      }
      return { tag, val: msgs } as HookOutput;
    }
    case 'write-manifests': {
      if (!Array.isArray(v.val)) return `arm 'write-manifests' carries ${describe(v.val)}, expected a list of tool manifests`;
      const list: ToolManifest[] = [];
      for (const [i, t] of v.val.entries()) {
        if (!isRecord(t) || typeof t.binaryName !== 'string' || typeof t.content !== 'string')
          return `arm 'write-manifests' entry ${i} is not a {binary-name, content} record`;
        list.push({ binaryName: t.binaryName, content: t.content });
      }
      return { tag: 'write-manifests', val: list };
    }
  }
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return `a record {${Object.keys(v).join(', ')}}`;
  return `a ${typeof v}`;
}

function mib(n: number): string {
  return (n / 1048576).toFixed(0);
}

/** Classifies a rejected handler call. */
export function failureOf(e: unknown): CallFailure {
  if (e instanceof GuestError) {
    const p = e.payload;
    return { ok: false, arm: 'error', defect: `returned err: ${typeof p === 'string' ? p : JSON.stringify(p)}` };
  }
  if (e instanceof DeadlineExceeded) return { ok: false, arm: 'deadline', defect: `did not answer within its ${e.deadlineMs} ms deadline and was stopped` };
  if (e instanceof MemoryLimitExceeded) return { ok: false, arm: 'memory', defect: `was killed at its ${mib(e.limitBytes)} MiB memory limit` };
  if (e instanceof GuestTrap) return { ok: false, arm: 'trap', defect: `crashed: ${e.message}` };
  if (e instanceof HostFault) return { ok: false, arm: 'fault', defect: `failed: ${e.message}` };
  return { ok: false, arm: 'fault', defect: `failed: ${(e as Error)?.message ?? String(e)}` };
}

/** A handler's raw return value as a call result: the hook-output, or `unreadable` saying why. */
export function readCallResult(raw: unknown): CallResult {
  const out = readHookOutput(raw);
  if (typeof out === 'string') return { ok: false, arm: 'unreadable', defect: `returned a value the runtime cannot read: ${out}` };
  return { ok: true, out };
}
