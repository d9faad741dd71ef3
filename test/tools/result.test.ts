import { describe, expect, it } from 'vitest';
import { MurError } from '../../runtime/errors.ts';
import { parseToolResult } from '../../runtime/tools/result.ts';

describe('tool-result validation (murmur:tool/run)', () => {
  it('accepts the jco-lifted record and the JSON spellings', () => {
    const lifted = parseToolResult({ status: 'passed', summary: undefined, data: 'hi', dataPath: undefined, truncated: false, metadata: [] });
    expect(lifted).toEqual({ status: 'passed', data: 'hi', truncated: false, metadata: [], warnings: [] });
    expect(parseToolResult({ status: 'failed', 'data-path': 'out/x.json', truncated: true, metadata: [] })).toMatchObject({
      status: 'failed',
      dataPath: 'out/x.json',
      truncated: true,
    });
    expect(parseToolResult({ status: 'error', data_path: 'a', summary: null, data: null, metadata: null })).toMatchObject({ status: 'error', dataPath: 'a' });
  });

  it('reserved key continuation_id is extracted ("" kept: it means drop)', () => {
    expect(parseToolResult({ status: 'passed', metadata: [['continuation_id', 'resp_1']] }).continuationId).toBe('resp_1');
    expect(parseToolResult({ status: 'passed', metadata: [['continuation_id', '']] }).continuationId).toBe('');
    expect(parseToolResult({ status: 'passed', metadata: [] }).continuationId).toBeUndefined();
  });

  it('reserved key state_effect is extracted: read | mutate; anything else → unknown with a warning', () => {
    expect(parseToolResult({ status: 'passed', metadata: [['state_effect', 'read']] }).stateEffect).toBe('read');
    expect(parseToolResult({ status: 'passed', metadata: [['state_effect', 'mutate']] }).stateEffect).toBe('mutate');
    const odd = parseToolResult({ status: 'passed', metadata: [['state_effect', 'write']] });
    expect(odd.stateEffect).toBeUndefined();
    expect(odd.warnings[0]).toMatch(/neither "read" nor "mutate"/);
  });

  it('reserved key resource_id is extracted verbatim; all pairs stay in metadata', () => {
    const r = parseToolResult({
      status: 'passed',
      metadata: [
        ['resource_id', 'sym:Foo::bar'],
        ['x', 'y'],
        ['state_effect', 'read'],
      ],
    });
    expect(r.resourceId).toBe('sym:Foo::bar');
    expect(r.metadata).toEqual([
      ['resource_id', 'sym:Foo::bar'],
      ['x', 'y'],
      ['state_effect', 'read'],
    ]);
  });

  it('rejects a malformed result with E-TOOL-001 naming the field', () => {
    const cases: [unknown, string][] = [
      [null, 'tool-result'],
      [{ status: 'ok' }, 'status'],
      [{ status: 'passed', data: 5 }, 'data'],
      [{ status: 'passed', truncated: 'yes' }, 'truncated'],
      [{ status: 'passed', metadata: { a: 'b' } }, 'metadata'],
      [{ status: 'passed', metadata: [['a']] }, 'metadata[0]'],
      [{ status: 'passed', metadata: [['a', 1]] }, 'metadata[0]'],
      [{ status: 'passed', dataPath: 'a', 'data-path': 'b' }, 'dataPath'],
    ];
    for (const [raw, field] of cases) {
      try {
        parseToolResult(raw);
        expect.unreachable(JSON.stringify(raw));
      } catch (e) {
        expect(e).toBeInstanceOf(MurError);
        expect((e as MurError).code).toBe('E-TOOL-001');
        expect((e as MurError).location?.field).toBe(field);
      }
    }
  });
});
