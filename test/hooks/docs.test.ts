import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HANDLERS } from '../../runtime/contracts/commit-table.ts';
import { HOOK_DOCS_PATH, renderHookDocs } from '../../runtime/hooks/docs.ts';

describe('docs/hooks.md', () => {
  it('is in sync with the commit table (run `node --import tsx runtime/hooks/docs.ts`)', () => {
    expect(readFileSync(HOOK_DOCS_PATH, 'utf8')).toBe(renderHookDocs());
  });

  it('has one row per handler naming its committed arm', () => {
    const doc = renderHookDocs();
    for (const h of HANDLERS) expect(doc).toContain(`| \`${h}\` |`);
    expect(doc).toContain(
      '| `on-tool-call` | Twice per model-requested tool invocation: before dispatch and after it returns or errors | `deny`, at the decision point only |',
    );
  });
});
