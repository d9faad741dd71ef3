import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DOCS_PATH, renderManifestDocs } from '../../runtime/manifest/docs.ts';
import { ARTIFACT_SCHEMA, CAPSULE_SCHEMA } from '../../runtime/manifest/schema.ts';

describe('docs/manifest.md', () => {
  it('is in sync with the schema table (run `npm run gen:docs`)', () => {
    expect(readFileSync(DOCS_PATH, 'utf8')).toBe(renderManifestDocs());
  });

  it('documents every visible field with its default', () => {
    const doc = renderManifestDocs();
    for (const f of [...CAPSULE_SCHEMA, ...ARTIFACT_SCHEMA]) if (!f.docHidden) expect(doc).toContain(`| \`${f.path}\` |`);
    expect(doc).toContain('| `inference.max_turns` | integer | `10` |');
    expect(doc).toContain('| `capabilities.limits.memory_bytes` | bytes | 536870912 (512 MiB) |');
  });
});
