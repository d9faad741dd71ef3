/**
 * Relative links between the docs hold: every `[text](path#anchor)` in README.md and docs/**.md
 * names a file that exists, and its anchor a heading of that file (GitHub's heading ids). Moving a
 * section, or a run log out to docs/measurements/, must not leave a link pointing nowhere.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? markdownFiles(p) : p.endsWith('.md') ? [p] : [];
  });
}

/** The text a reader sees as prose: fenced blocks and inline code spans hold no links. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '``');
}

/** GitHub's id for a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function headingIds(text: string): Set<string> {
  const ids = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const visible = m[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = visible
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    ids.add(n === 0 ? base : `${base}-${n}`);
  }
  return ids;
}

const files = [join(PROJECT_ROOT, 'README.md'), ...markdownFiles(join(PROJECT_ROOT, 'docs'))];

describe('links between the docs', () => {
  it('every relative link reaches a file, and its anchor a heading of that file', () => {
    const broken: string[] = [];
    for (const file of files) {
      const lines = prose(readFileSync(file, 'utf8')).split('\n');
      lines.forEach((line, i) => {
        for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) {
          const target = m[1]!;
          if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
          const [path, anchor] = target.split('#', 2) as [string, string | undefined];
          const where = `${relative(PROJECT_ROOT, file)}:${i + 1}: ${target}`;
          const resolved = path === '' ? file : join(dirname(file), path);
          if (!existsSync(resolved)) {
            broken.push(`${where} (no such file)`);
            continue;
          }
          if (anchor === undefined || !resolved.endsWith('.md')) continue;
          if (!headingIds(readFileSync(resolved, 'utf8')).has(anchor)) broken.push(`${where} (no such heading)`);
        }
      });
    }
    expect(broken).toEqual([]);
  });
});
