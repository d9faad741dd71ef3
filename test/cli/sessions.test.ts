/**
 * `mur sessions list|prune` over real workdirs made by createWorkdir: only session folders are
 * considered, a session whose process is alive is never removed, --keep and --older-than decide
 * the rest, --dry-run removes nothing.
 */
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { appendFileSync, existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mur } from './mur.ts';
import { parseAge } from '../../runtime/cli/sessions.ts';
import { newSessionId } from '../../runtime/session/id.ts';
import { listSessions } from '../../runtime/session/inventory.ts';
import { createWorkdir, machineTag, ownerFile } from '../../runtime/session/workdir.ts';
import { tmp } from '../loop/kit.ts';

const DAY = 86_400_000;

/** A session workdir whose trace last changed `idleDays` ago; ended with `exit` unless undefined. */
function session(root: string, o: { capsule: string; idleDays: number; exit?: string; owner?: number }): string {
  const id = newSessionId();
  const w = createWorkdir(root, id);
  const t = Date.now() - o.idleDays * DAY;
  appendFileSync(
    w.trace,
    `${JSON.stringify({ event_type: 'session_start', session_id: id, timestamp: t - 60_000, seq: 1, capsule_name: o.capsule, capsule_version: '1.0.0' })}\n`,
  );
  writeFileSync(join(w.out, 'result.txt'), 'x'.repeat(1000));
  if (o.exit) appendFileSync(w.trace, `${JSON.stringify({ event_type: 'session_end', session_id: id, timestamp: t, seq: 2, exit_status: o.exit })}\n`);
  // Whose process runs it: by default one that has exited.
  writeFileSync(ownerFile(w.dir), JSON.stringify({ pid: o.owner ?? deadPid, host: machineTag() }));
  utimesSync(w.trace, new Date(t), new Date(t));
  return id;
}

let deadPid = 0;

async function exitedPid(): Promise<number> {
  const p = spawn(process.execPath, ['-e', '0']);
  await new Promise((r) => p.once('exit', r));
  return p.pid!;
}

describe('mur sessions', () => {
  it('lists sessions newest first with capsule, status and size; ignores folders that are not sessions', async () => {
    deadPid = await exitedPid();
    const root = tmp('sessions-');
    const old = session(root, { capsule: 'alpha', idleDays: 3, exit: 'ok' });
    const recent = session(root, { capsule: 'beta', idleDays: 0, exit: 'failed' });
    const crashed = session(root, { capsule: 'gamma', idleDays: 1 });
    const live = session(root, { capsule: 'delta', idleDays: 2, owner: process.pid });
    mkdirSync(join(root, 'not-a-session'));
    writeFileSync(join(root, 'not-a-session', 'trace.jsonl'), '');
    mkdirSync(join(root, newSessionId())); // no trace: not a workdir

    const all = listSessions(root);
    expect(all.map((s) => [s.id, s.capsule, s.state, s.exitStatus])).toEqual([
      [recent, 'beta', 'ended', 'failed'],
      [crashed, 'gamma', 'unfinished', undefined],
      [live, 'delta', 'running', undefined],
      [old, 'alpha', 'ended', 'ok'],
    ]);
    expect(all.every((s) => s.bytes >= 1000)).toBe(true);

    const r = await mur(['sessions', 'list', '--work-root', root]);
    expect(r.code).toBe(0);
    const lines = r.out.split('\n');
    expect(lines[0]).toMatch(/^SESSION\s+CAPSULE\s+STARTED\s+LAST ACTIVITY\s+STATUS\s+SIZE$/);
    expect(lines[1]).toContain(recent);
    expect(lines[1]).toMatch(/beta 1\.0\.0.*failed/);
    expect(lines.at(-1)).toMatch(/^4 session\(s\), .* in /);
  });

  it('prune removes idle sessions beyond --keep, never a running one or a non-session folder; --dry-run removes nothing', async () => {
    deadPid = await exitedPid();
    const root = tmp('sessions-');
    const fresh = session(root, { capsule: 'a', idleDays: 1, exit: 'ok' });
    const oldEnded = session(root, { capsule: 'b', idleDays: 9, exit: 'ok' });
    const oldCrashed = session(root, { capsule: 'c', idleDays: 10 });
    const oldRunning = session(root, { capsule: 'd', idleDays: 11, owner: process.pid });
    const older = session(root, { capsule: 'e', idleDays: 12, exit: 'failed' });
    mkdirSync(join(root, 'keep-me'));

    const dry = await mur(['sessions', 'prune', '--work-root', root, '--older-than', '7d', '--keep', '1', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.out).toContain(`would remove ${oldEnded}`);
    expect(dry.out).toMatch(/would remove 3 session\(s\)/);
    expect(listSessions(root)).toHaveLength(5);

    const r = await mur(['sessions', 'prune', '--work-root', root, '--older-than', '7d', '--keep', '1']);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`kept ${oldRunning}: still running`);
    expect(
      listSessions(root)
        .map((s) => s.id)
        .sort(),
    ).toEqual([fresh, oldRunning].sort());
    for (const id of [oldEnded, oldCrashed, older]) expect(existsSync(join(root, id))).toBe(false);
    expect(existsSync(join(root, 'keep-me'))).toBe(true);

    // --keep holds the most recent even when they are old.
    const all = await mur(['sessions', 'prune', '--work-root', root, '--older-than', '0', '--keep', '1']);
    expect(all.code).toBe(0);
    expect(
      listSessions(root)
        .map((s) => s.id)
        .sort(),
    ).toEqual([fresh, oldRunning].sort());
  });

  it('a workdir records the process running it', () => {
    const root = tmp('sessions-');
    const w = createWorkdir(root, newSessionId());
    const owner = JSON.parse(readFileSync(ownerFile(w.dir), 'utf8'));
    expect(owner).toMatchObject({ pid: process.pid, host: machineTag() });
    // Not the host name itself: tools granted the workdir can read this file.
    expect(JSON.stringify(owner)).not.toContain(hostname());
    expect(listSessions(root)[0]!.state).toBe('running');
  });

  it('bad input: a clear error naming the flag or the subcommand', async () => {
    expect(() => parseAge('7 days')).toThrow(/--older-than must be a duration like 30m, 12h or 7d, got "7 days"/);
    expect(() => parseAge('12')).toThrow(/--older-than/);
    expect(parseAge('0')).toBe(0);
    expect(parseAge('1.5h')).toBe(5_400_000);
    const r = await mur(['sessions', 'purge']);
    expect(r.code).toBe(1);
    expect(r.err).toContain('E-CLI-013');
    expect(r.err).toContain("unknown sessions subcommand 'purge'");
    const k = await mur(['sessions', 'prune', '--keep', '-1', '--work-root', tmp('sessions-')]);
    expect(k.code).toBe(2);
    expect(k.err).toContain('--keep must be a whole number');
    expect((await mur(['sessions', 'list', '--work-root', join(tmp('sessions-'), 'nope')])).out).toMatch(/^no sessions in /);
  });
});
