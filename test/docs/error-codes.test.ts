/**
 * docs/errors.md and the code agree both ways: every error code raised in runtime/ or operator/
 * is listed, and every listed code is raised somewhere (a code nothing emits is a promise the
 * project does not keep).
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Codes raised by the code: a code as a string literal ('E-X-001') or in a message ("… [E-X-001]"). */
function raisedCodes(): Set<string> {
  const raised = new Set<string>();
  for (const dir of ['runtime', 'operator']) {
    for (const f of sources(join(PROJECT_ROOT, dir))) {
      if (f.endsWith('.test.ts')) continue;
      for (const m of readFileSync(f, 'utf8').matchAll(/['"`[](E-[A-Z]+-\d{3})['"`\]\s:]/g)) raised.add(m[1]!);
    }
  }
  return raised;
}

const doc = readFileSync(join(PROJECT_ROOT, 'docs/errors.md'), 'utf8');
/** Codes the reference page lists: the first cell of a table row. */
const listed = new Set([...doc.matchAll(/^\|\s*`(E-[A-Z]+-\d{3})`/gm)].map((m) => m[1]!));

describe('docs/errors.md', () => {
  it('lists every error code raised in runtime/ and operator/', () => {
    const missing = [...raisedCodes()].filter((c) => !listed.has(c)).sort();
    expect(missing).toEqual([]);
  });

  it('lists only codes that runtime/ or operator/ raise', () => {
    expect(listed.size).toBeGreaterThan(50);
    const raised = raisedCodes();
    const unraised = [...listed].filter((c) => !raised.has(c)).sort();
    expect(unraised).toEqual([]);
  });
});
