/**
 * The session workdir:
 *
 *   <root>/<session-id>/
 *     tools/<name>/murmur.yaml     artifact manifest   (one dir per artifact)
 *     tools/<name>/<name>.wasm     component (skills: skill.md)
 *     logs/owner.json              pid + machine tag of the process running the session
 *     out/
 *     trace.jsonl                  empty at creation
 */
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import path from 'node:path';
import { MurError } from '../errors.ts';
import { isSessionId } from './id.ts';

export interface WorkdirLayout {
  /** `<root>/<session-id>` (absolute). */
  dir: string;
  tools: string;
  logs: string;
  out: string;
  trace: string;
}

export interface WorkdirArtifact {
  name: string;
  files: readonly { name: string; bytes: Uint8Array }[];
}

export function workdirLayout(root: string, sessionId: string): WorkdirLayout {
  const dir = path.join(path.resolve(root), sessionId);
  return { dir, tools: path.join(dir, 'tools'), logs: path.join(dir, 'logs'), out: path.join(dir, 'out'), trace: path.join(dir, 'trace.jsonl') };
}

/**
 * This machine, as recorded in owner.json: a digest of the host name, not the name itself (a tool
 * granted the workdir can read the file).
 */
export function machineTag(): string {
  return createHash('sha256').update(hostname()).digest('hex').slice(0, 16);
}

/** `logs/owner.json` of a workdir: the pid and machine tag of the process running the session. */
export function ownerFile(workdir: string): string {
  return path.join(workdir, 'logs', 'owner.json');
}

/** `tools/<name>/` of a workdir. */
export function toolDir(w: WorkdirLayout, name: string): string {
  return path.join(w.tools, name);
}

/**
 * Installs an artifact's files as `tools/<name>/` atomically (temp dir + rename). Refuses when
 * `tools/<name>/` already exists (E-REG-013).
 */
export function installTool(w: WorkdirLayout, a: WorkdirArtifact): string {
  const dest = toolDir(w, a.name);
  if (existsSync(dest)) {
    throw new MurError('E-REG-013', `tools/${a.name}/ already exists in ${w.dir}`, {
      hint: 'an installed artifact cannot be replaced within a session; start a new session',
      location: { file: dest },
    });
  }
  const tmp = path.join(w.tools, `.tmp-${a.name}-${randomBytes(4).toString('hex')}`);
  mkdirSync(tmp, { recursive: true });
  try {
    for (const f of a.files) writeFileSync(path.join(tmp, f.name), f.bytes);
    renameSync(tmp, dest);
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  return dest;
}

/**
 * Creates `<root>/<sessionId>/` with tools/<name>/ for each artifact, logs/, out/ and an empty
 * trace.jsonl. Refuses an invalid session id or an existing workdir (E-REG-015).
 */
export function createWorkdir(root: string, sessionId: string, artifacts: readonly WorkdirArtifact[] = []): WorkdirLayout {
  if (!isSessionId(sessionId)) {
    throw new MurError('E-REG-015', `invalid session id '${sessionId}'`, {
      hint: "session ids are 'ses_' followed by 32 lowercase hex characters; use newSessionId()",
    });
  }
  const w = workdirLayout(root, sessionId);
  mkdirSync(path.dirname(w.dir), { recursive: true });
  try {
    mkdirSync(w.dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new MurError('E-REG-015', `session workdir ${w.dir} already exists`, {
        hint: 'every session gets a fresh workdir; use a new session id',
        location: { file: w.dir },
        cause: e,
      });
    }
    throw e;
  }
  mkdirSync(w.tools);
  mkdirSync(w.logs);
  mkdirSync(w.out);
  writeFileSync(w.trace, '');
  // Who runs this session, so `mur sessions prune` never removes one still running.
  writeFileSync(ownerFile(w.dir), `${JSON.stringify({ pid: process.pid, host: machineTag(), started: new Date().toISOString() })}\n`);
  for (const a of artifacts) installTool(w, a);
  return w;
}
