import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_SHELL_DESCRIPTION, shellManifestDescription } from '../../runtime/loop/shell-manifests.ts';

function workdirWith(binary: string, content: string): string {
  const wd = mkdtempSync(join(tmpdir(), 'shell-man-'));
  mkdirSync(join(wd, 'tools', binary), { recursive: true });
  writeFileSync(join(wd, 'tools', binary, 'murmur.yaml'), content);
  return wd;
}

describe('shell tool enrichment manifests', () => {
  it('takes the description as one clean paragraph, bounded', () => {
    expect(shellManifestDescription(workdirWith('jq', 'description: "a\\tb\\n\\n c\\u0007d"\n'), 'jq')).toBe('a b c d');
    const long = shellManifestDescription(workdirWith('jq', `description: ${'x'.repeat(5000)}\n`), 'jq')!;
    expect(long).toHaveLength(MAX_SHELL_DESCRIPTION);
    expect(long.endsWith('…')).toBe(true);
  });

  it('a missing, malformed or description-less manifest gives nothing (the generic line stays)', () => {
    expect(shellManifestDescription(mkdtempSync(join(tmpdir(), 'shell-man-')), 'jq')).toBeUndefined();
    expect(shellManifestDescription(workdirWith('jq', 'description: [unclosed\n'), 'jq')).toBeUndefined();
    expect(shellManifestDescription(workdirWith('jq', 'name: jq\n'), 'jq')).toBeUndefined();
    expect(shellManifestDescription(workdirWith('jq', 'description: 42\n'), 'jq')).toBeUndefined();
    expect(shellManifestDescription(workdirWith('jq', 'description: "  "\n'), 'jq')).toBeUndefined();
  });
});
