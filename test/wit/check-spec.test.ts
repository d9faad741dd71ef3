/**
 * `npm run check:spec` (scripts/check-spec.ts) against spec documents written here from our own
 * tables, so the test needs nothing outside the repository: agreeing documents pass, a changed
 * row is named, and missing documents fail with a message saying where they were looked for.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { checkSpec, readTables } from '../../scripts/check-spec.ts';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';

/** A wit-interfaces.md / runtime-inference.md pair carrying `tables` in the spec's table format. */
function writeSpec(tables = readTables()): string {
  const dir = mkdtempSync(join(tmpdir(), 'spec-'));
  const iface = tables.interfaces.map((i) => `| [\`${i}\`](https://example.invalid) | used | purpose |`).join('\n');
  const cell = (l: string[]) => (l.length ? l.map((x) => `\`${x}\``).join(', ') : '—');
  const worlds = Object.entries(tables.worlds)
    .map(([w, r]) => `| \`${w}\` | ${cell(r.imports)} | ${cell(r.exports)} | [x](y) |`)
    .join('\n');
  writeFileSync(
    join(dir, 'wit-interfaces.md'),
    `# WIT\n\n## Interfaces\n\n| Interface | Used by | Purpose |\n|---|---|---|\n${iface}\n\n## Worlds\n\n| World | Imports | Exports | Defined in |\n|---|---|---|---|\n${worlds}\n\nAgent capsules compile against no world.\n`,
  );
  copyFileSync(join(PROJECT_ROOT, 'wit/runtime/inference.wit'), join(dir, 'runtime-inference.md'));
  return dir;
}

describe('check:spec', () => {
  it('passes when the documents carry the tables', () => {
    expect(checkSpec(writeSpec())).toEqual([]);
  });

  it('names a world whose exports differ and an interface the tables lack', () => {
    const t = readTables();
    t.worlds.tool!.exports = ['tool/run', 'text/chunks'];
    t.interfaces.push('murmur:new/thing');
    expect(checkSpec(writeSpec(t))).toEqual([
      'interface murmur:new/thing: in the spec table, missing from wit/tables.json',
      'world tool: exports tool/run in wit/tables.json, tool/run, text/chunks in the spec',
    ]);
  });

  it('names an inference interface body that drifted', () => {
    const dir = writeSpec();
    const p = join(dir, 'runtime-inference.md');
    writeFileSync(p, readFileSync(p, 'utf8').replace('model-used: string', 'model-name: string'));
    expect(checkSpec(dir)).toEqual([expect.stringMatching(/^wit\/runtime\/inference\.wit: the interface body differs from /)]);
  });

  it('fails, saying where it looked, when the documents are not there', () => {
    const missing = join(mkdtempSync(join(tmpdir(), 'nospec-')), 'spec');
    mkdirSync(join(missing, '..'), { recursive: true });
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'scripts/check-spec.ts')], {
      env: { ...process.env, MURMUR_SPEC_DIR: missing },
      encoding: 'utf8',
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`check:spec: the spec documents are not there: ${join(missing, 'wit-interfaces.md')}`);
    expect(r.stderr).toContain('set MURMUR_SPEC_DIR');
  });

  it('fails, saying what to set, when MURMUR_SPEC_DIR is not set (it looks nowhere beside the clone)', () => {
    const env = { ...process.env };
    delete env.MURMUR_SPEC_DIR;
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, 'scripts/check-spec.ts')], { env, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('check:spec: MURMUR_SPEC_DIR is not set');
  });
});
