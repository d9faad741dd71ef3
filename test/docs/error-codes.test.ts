/** Every error code the code can raise is listed in docs/errors.md, the one reference page. */
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

describe('docs/errors.md', () => {
  it('lists every error code raised in runtime/ and operator/', () => {
    const doc = readFileSync(join(PROJECT_ROOT, 'docs/errors.md'), 'utf8');
    const raised = new Set<string>();
    for (const dir of ['runtime', 'operator']) {
      let files: string[] = [];
      try {
        files = sources(join(PROJECT_ROOT, dir));
      } catch {
        continue;
      }
      for (const f of files) for (const m of readFileSync(f, 'utf8').matchAll(/['"`](E-[A-Z]+-\d{3})['"`]/g)) raised.add(m[1]!);
    }
    const missing = [...raised].filter((c) => !doc.includes(`\`${c}\``)).sort();
    expect(missing).toEqual([]);
  });
});
