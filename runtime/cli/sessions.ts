/** `mur sessions list|prune`: the session workdirs `mur run` and `mur serve` leave behind. */
import { resolve } from 'node:path';
import { defaultWorkRoot } from '../compose/stage.ts';
import { listSessions, pruneSessions, type SessionInfo } from '../session/inventory.ts';
import { MurError } from '../errors.ts';
import { helpText, parseArgs, UsageError, type FlagSpec } from './args.ts';

const FLAGS: FlagSpec = {
  'work-root': { type: 'string', help: 'where the session workdirs are (default: $MURMUR_WORK_ROOT or ~/.murmur/sessions)' },
  'older-than': { type: 'string', help: 'prune: remove sessions idle longer than this (e.g. 30m, 12h, 7d)', default: '7d' },
  keep: { type: 'number', help: 'prune: always keep this many of the most recently active sessions', default: 10 },
  'dry-run': { type: 'boolean', help: 'prune: print what would be removed, remove nothing' },
  json: { type: 'boolean', help: 'list: print JSON' },
  help: { type: 'boolean', help: 'show this help' },
};

export const SESSIONS_HELP = helpText(
  'mur sessions <list|prune> [flags]',
  'list    every session workdir: capsule, when it started, its last activity, how it ended, its size\nprune   remove the workdirs of old sessions (trace, logs, out/, staged tools). A session whose\n        process is still running on this machine is never removed; folders that are not session\n        workdirs (ses_<32 hex> holding a trace.jsonl) are never touched.',
  FLAGS,
);

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `30m`, `12h`, `7d`, `2w`, or `0` → milliseconds. */
export function parseAge(v: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([smhdw])?$/.exec(v.trim());
  if (!m || (m[2] === undefined && Number(m[1]) !== 0)) throw new UsageError(`--older-than must be a duration like 30m, 12h or 7d, got ${JSON.stringify(v)}`);
  return Number(m[1]) * (m[2] ? UNITS[m[2]]! : 0);
}

function human(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1048576) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1073741824) return `${(bytes / 1048576).toFixed(1)} MiB`;
  return `${(bytes / 1073741824).toFixed(2)} GiB`;
}

function ago(d: Date, now: number): string {
  const s = Math.max(0, Math.round((now - d.getTime()) / 1000));
  if (s < 120) return `${s}s ago`;
  if (s < 7200) return `${Math.round(s / 60)}m ago`;
  if (s < 172800) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86400)}d ago`;
}

function status(s: SessionInfo): string {
  return s.state === 'ended' ? (s.exitStatus ?? 'ended') : s.state;
}

export async function sessionsCommand(argv: string[], out: (s: string) => void = console.log): Promise<number> {
  const { flags, positionals } = parseArgs(argv, FLAGS);
  if (flags.help) {
    out(SESSIONS_HELP);
    return 0;
  }
  const root = resolve((flags['work-root'] as string | undefined) ?? defaultWorkRoot());
  const now = Date.now();
  const sub = positionals[0];
  if (sub === 'list') {
    const all = listSessions(root);
    if (flags.json) {
      out(
        JSON.stringify(
          all.map((s) => ({ ...s, startedAt: s.startedAt.toISOString(), lastActivityAt: s.lastActivityAt.toISOString() })),
          null,
          2,
        ),
      );
      return 0;
    }
    if (!all.length) {
      out(`no sessions in ${root}`);
      return 0;
    }
    const rows = all.map((s) => [
      s.id,
      s.capsule ? `${s.capsule}${s.version ? ` ${s.version}` : ''}` : '-',
      s.startedAt.toISOString().slice(0, 16).replace('T', ' '),
      ago(s.lastActivityAt, now),
      status(s),
      human(s.bytes),
    ]);
    const head = ['SESSION', 'CAPSULE', 'STARTED', 'LAST ACTIVITY', 'STATUS', 'SIZE'];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    for (const r of [head, ...rows])
      out(
        r
          .map((c, i) => c.padEnd(widths[i]!))
          .join('  ')
          .trimEnd(),
      );
    out(`${all.length} session(s), ${human(all.reduce((a, s) => a + s.bytes, 0))} in ${root}`);
    return 0;
  }
  if (sub === 'prune') {
    const keep = Number(flags.keep);
    if (!Number.isInteger(keep) || keep < 0) throw new UsageError(`--keep must be a whole number ≥ 0, got ${flags.keep}`);
    const dryRun = Boolean(flags['dry-run']);
    const r = pruneSessions(root, { olderThanMs: parseAge(String(flags['older-than'])), keep, dryRun, now });
    for (const s of r.removed)
      out(
        `${dryRun ? 'would remove' : 'removed'} ${s.id}  ${s.capsule ?? '-'}  ${status(s)}, idle ${ago(s.lastActivityAt, now).replace(' ago', '')}, ${human(s.bytes)}`,
      );
    for (const s of r.running) out(`kept ${s.id}: still running (its process is alive)`);
    const freed = r.removed.reduce((a, s) => a + s.bytes, 0);
    out(`${dryRun ? 'would remove' : 'removed'} ${r.removed.length} session(s) (${human(freed)}), kept ${r.kept.length + r.running.length} in ${root}`);
    return 0;
  }
  throw new MurError('E-CLI-013', sub ? `unknown sessions subcommand '${sub}'` : 'mur sessions needs a subcommand', {
    hint: 'mur sessions list, or mur sessions prune --older-than 7d',
  });
}
