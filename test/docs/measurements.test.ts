/**
 * Reference docs say what the system does; the runs behind their figures live in
 * docs/measurements/, dated. A session's run log (its session number, the machine's load average)
 * written into a reference doc is what this refuses, naming the file and line.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';

const DOCS = join(PROJECT_ROOT, 'docs');
const MEASUREMENTS = join(DOCS, 'measurements');

/** What marks a run log: "session 13", "load 0.3–1.4", "load average 23", "(load ≈ 1". */
const RUN_LOG = [/\bsessions? \d+/i, /\bload(?: average)?(?: 1\/5\/15 min)? ≈? ?\d/i];

describe('docs/measurements', () => {
  it('reference docs and the README carry no run logs: no session numbers or load averages', () => {
    const found: string[] = [];
    const referenceDocs = readdirSync(DOCS)
      .filter((f) => f.endsWith('.md'))
      .map((f) => join('docs', f));
    for (const file of ['README.md', ...referenceDocs]) {
      readFileSync(join(PROJECT_ROOT, file), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (RUN_LOG.some((re) => re.test(line))) found.push(`${file}:${i + 1}: ${line.trim().slice(0, 100)}`);
        });
    }
    expect(found).toEqual([]);
  });

  it('every measurements file is listed in its index and has dated sections', () => {
    const index = readFileSync(join(MEASUREMENTS, 'README.md'), 'utf8');
    const problems: string[] = [];
    for (const f of readdirSync(MEASUREMENTS).filter((n) => n.endsWith('.md') && n !== 'README.md')) {
      if (!index.includes(`](${f})`)) problems.push(`${f}: not linked from docs/measurements/README.md`);
      const text = readFileSync(join(MEASUREMENTS, f), 'utf8');
      if (!/^## \d{4}-\d{2}-\d{2}\b/m.test(text)) problems.push(`${f}: no section headed "## YYYY-MM-DD …"`);
    }
    expect(problems).toEqual([]);
  });
});
