import { describe, expect, it } from 'vitest';
import { callResource, findRedundantCalls, type ToolCallRecord } from '../../runtime/tools/redundancy.ts';

const read = (extra: Partial<ToolCallRecord>): ToolCallRecord => ({ tool_name: 'reader', state_effect: 'read', ...extra });

describe('redundant-call detector (mur trace)', () => {
  it('resource_id + state_effect: a second read of the same resource is redundant', () => {
    const r = findRedundantCalls([
      read({ resource_id: 'sym:Foo::bar', turn: 1 }),
      read({ resource_id: 'sym:Foo::baz', turn: 1 }),
      read({ resource_id: 'sym:Foo::bar', turn: 2 }),
    ]);
    expect(r.redundant).toEqual([
      { index: 2, turn: 2, toolName: 'reader', resource: { key: 'id:sym:Foo::bar', source: 'resource_id', value: 'sym:Foo::bar' }, previousIndex: 0 },
    ]);
    expect(r).toMatchObject({ calls: 3, reads: 3, mutates: 0, unknown: 0 });
  });

  it('resource ids compare byte-for-byte', () => {
    expect(findRedundantCalls([read({ resource_id: 'a' }), read({ resource_id: 'A' }), read({ resource_id: 'a ' })]).redundant).toEqual([]);
  });

  it('a mutate in between ends the streak', () => {
    const r = findRedundantCalls([
      read({ resource_id: 'f' }),
      { tool_name: 'writer', state_effect: 'mutate', resource_id: 'f' },
      read({ resource_id: 'f' }),
      read({ resource_id: 'f' }),
    ]);
    expect(r.redundant.map((c) => [c.index, c.previousIndex])).toEqual([[3, 2]]);
  });

  it('without resource_id, guesses from path-like input fields (path, file, file_path, filepath, filename)', () => {
    for (const field of ['path', 'file', 'file_path', 'filepath', 'filename']) {
      const r = findRedundantCalls([read({ input: { [field]: './src/a.ts' } }), read({ input: JSON.stringify({ [field]: 'src//a.ts' }) })]);
      expect(r.redundant).toHaveLength(1);
      expect(r.redundant[0]!.resource.source).toBe(`input.${field}`);
    }
    expect(callResource({ tool_name: 't', input: { query: 'x' } })).toBeUndefined();
  });

  it('unknown (state_effect omitted) is never credited as a redundant read, and ends the streak', () => {
    const unknownTwice = findRedundantCalls([
      { tool_name: 'cat', resource_id: 'f' },
      { tool_name: 'cat', resource_id: 'f' },
      { tool_name: 'cat', input: { path: 'a' } },
      { tool_name: 'cat', input: { path: 'a' } },
    ]);
    expect(unknownTwice.redundant).toEqual([]);
    expect(unknownTwice.unknown).toBe(4);
    const broken = findRedundantCalls([read({ resource_id: 'f' }), { tool_name: 'mystery', resource_id: 'f' }, read({ resource_id: 'f' })]);
    expect(broken.redundant).toEqual([]);
  });

  it('a failed read is not a read; an unscoped mutate/unknown call may have touched anything', () => {
    expect(findRedundantCalls([read({ resource_id: 'f', status: 'error' }), read({ resource_id: 'f' })]).redundant).toEqual([]);
    expect(findRedundantCalls([read({ resource_id: 'f' }), { tool_name: 'shellish' }, read({ resource_id: 'f' })]).redundant).toEqual([]);
    expect(
      findRedundantCalls([read({ resource_id: 'f' }), { tool_name: 'shellish' }, read({ resource_id: 'f' })], { unscopedInvalidatesAll: false }).redundant,
    ).toHaveLength(1);
    // an unscoped read changes nothing
    expect(findRedundantCalls([read({ resource_id: 'f' }), read({}), read({ resource_id: 'f' })]).redundant).toHaveLength(1);
  });

  it('resource_id and path guesses never collide', () => {
    expect(findRedundantCalls([read({ resource_id: 'a.txt' }), read({ input: { path: 'a.txt' } })]).redundant).toEqual([]);
  });
});
