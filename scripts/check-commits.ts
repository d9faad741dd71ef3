/**
 * Part of `npm run lint`: every commit after BASE (BASE included) has a subject of at most 72
 * characters that says what changed and a body that says why (docs/architecture.md, "Formatting,
 * linting and commit messages"). Merge commits are let through: git writes their subjects.
 * Commits before BASE were written before the rule and are not rewritten (a shared history).
 */
import { execFileSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The commit that added this script: the first one held to the rule. */
export const BASE = '6e6041b9b800d663227a5dae005b34279dad3bcf';
export const MAX_SUBJECT = 72;

/**
 * Commits after BASE that break the rule and stay in the history, which once landed is shared and
 * never rewritten: each is let through by its full hash, with what was wrong. Commits not yet
 * landed are reworded instead (none is listed).
 */
export const LET_THROUGH: Readonly<Record<string, string>> = {};

export interface Commit {
  hash: string;
  subject: string;
  body: string;
}

/** What is wrong with one commit's message, empty when nothing is. */
export function problems(c: Commit): string[] {
  const out: string[] = [];
  if (c.subject.length > MAX_SUBJECT) out.push(`subject is ${c.subject.length} characters (at most ${MAX_SUBJECT})`);
  if (c.body.trim() === '') out.push('no body saying why');
  return out;
}

// Fields and records split by ASCII unit and record separators, which a message cannot hold.
const FORMAT = '%H%x1f%s%x1f%b%x1e';

/** The non-merge commits of `range` (a git revision range), newest first. */
export function commits(cwd: string, range: string): Commit[] {
  const out = execFileSync('git', ['log', '--no-merges', `--format=${FORMAT}`, range], { cwd, encoding: 'utf8', maxBuffer: 64 << 20 });
  return out
    .split('\x1e')
    .map((r) => r.replace(/^\n/, ''))
    .filter((r) => r !== '')
    .map((r) => {
      const [hash = '', subject = '', body = ''] = r.split('\x1f');
      return { hash, subject, body };
    });
}

/** The commits of BASE..HEAD (BASE included) that break the rule, each with its problems; LET_THROUGH's are not. */
export function offenders(cwd: string, base = BASE, letThrough = LET_THROUGH): { commit: Commit; problems: string[] }[] {
  const all = [...commits(cwd, `${base}..HEAD`), ...commits(cwd, `${base}^!`)];
  return all
    .filter((c) => letThrough[c.hash] === undefined)
    .map((commit) => ({ commit, problems: problems(commit) }))
    .filter((o) => o.problems.length > 0);
}

function main(): void {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  try {
    execFileSync('git', ['cat-file', '-e', `${BASE}^{commit}`], { cwd: root, stdio: 'ignore' });
  } catch {
    console.error(`check-commits: base commit ${BASE} (scripts/check-commits.ts, BASE) is not in this clone's history; fetch the full history`);
    process.exit(1);
  }
  const found = offenders(root);
  for (const o of found) console.error(`${o.commit.hash.slice(0, 12)} "${o.commit.subject}": ${o.problems.join('; ')}`);
  if (found.length > 0) {
    console.error(`check-commits: ${found.length} commit(s) since ${BASE.slice(0, 12)} break the message rule`);
    process.exit(1);
  }
  console.log(`check-commits: every commit since ${BASE.slice(0, 12)} has a subject of at most ${MAX_SUBJECT} characters and a body`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
