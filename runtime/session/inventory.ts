/**
 * The session workdirs under a work root (`~/.murmur/sessions` by default): what each one is, and
 * pruning the old ones. Only folders named like a session id that hold a trace.jsonl are ever
 * considered, and a session whose owning process is still alive on this host is never removed.
 */
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { isSessionId } from './id.ts';
import { machineTag, ownerFile } from './workdir.ts';

export type SessionState = 'running' | 'ended' | 'unfinished';

export interface SessionInfo {
  id: string;
  dir: string;
  capsule?: string | undefined;
  version?: string | undefined;
  /** session_start time, else the folder's creation. */
  startedAt: Date;
  /** The last write to the trace: the session's last activity. */
  lastActivityAt: Date;
  /** `running`: no session_end and its process is alive here; `unfinished`: no session_end, nobody running it (crashed or killed). */
  state: SessionState;
  exitStatus?: string | undefined;
  bytes: number;
}

function sizeOf(p: string): number {
  let total = 0;
  for (const e of readdirSync(p, { withFileTypes: true })) {
    const f = path.join(p, e.name);
    if (e.isDirectory()) total += sizeOf(f);
    else if (e.isFile()) total += statSync(f).size;
  }
  return total;
}

function alive(dir: string): boolean {
  try {
    const o = JSON.parse(readFileSync(ownerFile(dir), 'utf8')) as { pid?: unknown; host?: unknown };
    if (typeof o.pid !== 'number' || o.host !== machineTag()) return false;
    process.kill(o.pid, 0);
    return true;
  } catch (e) {
    // EPERM: the process exists but belongs to someone else — alive.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Bytes [from, from + len) of a file. */
function readAt(file: string, from: number, len: number): string {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(len);
    const n = readSync(fd, buf, 0, len, from);
    return buf.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

const HEAD_BYTES = 1 << 20;
const TAIL_BYTES = 1 << 18;

/** session_start and session_end of a trace, read from its head and tail only (traces grow large). */
function ends(trace: string, size: number): { start?: Record<string, unknown>; end?: Record<string, unknown> } {
  const parse = (l: string): Record<string, unknown> | undefined => {
    try {
      return JSON.parse(l) as Record<string, unknown>;
    } catch {
      return undefined; // a partial line at a chunk edge, or a line being written
    }
  };
  const headText = readAt(trace, 0, Math.min(size, HEAD_BYTES));
  const tailText = size > HEAD_BYTES ? readAt(trace, size - TAIL_BYTES, TAIL_BYTES) : headText;
  const head = headText.split('\n').slice(0, 5);
  const tail = tailText.split('\n').slice(-6);
  const start = head.map(parse).find((e) => e?.event_type === 'session_start');
  const end = tail
    .map(parse)
    .reverse()
    .find((e) => e?.event_type === 'session_end');
  return { ...(start ? { start } : {}), ...(end ? { end } : {}) };
}

export function listSessions(root: string): SessionInfo[] {
  if (!existsSync(root)) return [];
  const out: SessionInfo[] = [];
  for (const name of readdirSync(root)) {
    const dir = path.join(root, name);
    const trace = path.join(dir, 'trace.jsonl');
    if (!isSessionId(name) || !existsSync(trace)) continue;
    let st: Stats;
    try {
      st = statSync(trace);
    } catch {
      continue;
    }
    const { start, end } = ends(trace, st.size);
    const ts = (v: unknown): Date | undefined => (typeof v === 'number' ? new Date(v) : undefined);
    out.push({
      id: name,
      dir,
      capsule: typeof start?.capsule_name === 'string' ? start.capsule_name : undefined,
      version: typeof start?.capsule_version === 'string' ? start.capsule_version : undefined,
      startedAt: ts(start?.timestamp) ?? statSync(dir).birthtime,
      lastActivityAt: st.mtime,
      state: end ? 'ended' : alive(dir) ? 'running' : 'unfinished',
      exitStatus: typeof end?.exit_status === 'string' ? end.exit_status : undefined,
      bytes: sizeOf(dir),
    });
  }
  return out.sort((a, b) => b.lastActivityAt.getTime() - a.lastActivityAt.getTime());
}

export interface PruneOptions {
  /** Remove sessions whose last activity is older than this many ms. */
  olderThanMs: number;
  /** Always keep this many of the most recently active sessions. */
  keep: number;
  dryRun?: boolean;
  now?: number;
}

export interface PruneResult {
  removed: SessionInfo[];
  kept: SessionInfo[];
  /** Old enough, but their process is still running them. */
  running: SessionInfo[];
}

export function pruneSessions(root: string, o: PruneOptions): PruneResult {
  const now = o.now ?? Date.now();
  const all = listSessions(root);
  const r: PruneResult = { removed: [], kept: [], running: [] };
  all.forEach((s, i) => {
    if (i < o.keep || now - s.lastActivityAt.getTime() < o.olderThanMs) r.kept.push(s);
    else if (s.state === 'running') r.running.push(s);
    else r.removed.push(s);
  });
  if (!o.dryRun) for (const s of r.removed) rmSync(s.dir, { recursive: true, force: true });
  return r;
}
