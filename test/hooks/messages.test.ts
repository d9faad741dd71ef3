/**
 * Message bookkeeping (wit-interfaces.md "Event field notes"): ids minted as `msg_` + uuid for every
 * message built from a hook's list, `source-id` verbatim, both stripped before the driver payload
 * (checked on the payload bytes); the tool-pair check; reading a hook's return value.
 */
import { describe, expect, it } from 'vitest';
import { buildDriverRequest } from '../../runtime/inference/wire.ts';
import { fromHookMessages } from '../../runtime/hooks/conversation.ts';
import { safeBinaryName } from '../../runtime/hooks/bus.ts';
import { readHookOutput } from '../../runtime/hooks/output.ts';
import { utf8Window } from '../../runtime/hooks/imports.ts';
import { adoptHookMessages, mintMessageId, stripBookkeeping, validateToolPairs } from '../../runtime/hooks/messages.ts';

describe('ids', () => {
  it('mintMessageId is msg_ + a v4 uuid, unique each time', () => {
    const ids = new Set(Array.from({ length: 1000 }, mintMessageId));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^msg_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('adopting a hook list: fresh ids (two identical messages get different ones), source-id kept or absent, inserted-by set', () => {
    const out = adoptHookMessages(
      [
        { role: 'user', content: 'same', id: 'mine', sourceId: 'k1' },
        { role: 'user', content: 'same' },
      ],
      'seed-context',
    );
    expect(out[0]!.id).not.toBe('mine');
    expect(out[0]!.id).not.toBe(out[1]!.id);
    expect(out[0]).toMatchObject({ sourceId: 'k1', insertedBy: 'seed-context' });
    expect('sourceId' in out[1]!).toBe(false);
  });
});

describe('stripping before the driver payload', () => {
  it('stripBookkeeping drops id / source-id / inserted-by in both spellings and leaves the input alone', () => {
    const input = [
      {
        role: 'user',
        content: 'x',
        id: 'msg_1',
        sourceId: 's',
        insertedBy: 'seed-context',
        'source-id': 's',
        'inserted-by': 'seed-context',
        tool_call_id: 't',
      },
    ];
    expect(stripBookkeeping(input)).toEqual([{ role: 'user', content: 'x', tool_call_id: 't' }]);
    expect(input[0]!.id).toBe('msg_1');
  });

  it('the payload bytes carry no id, no source-id, no inserted-by', () => {
    const adopted = adoptHookMessages([{ role: 'user', content: 'remember: the sky is green', sourceId: 'memory:42' }], 'seed-context');
    const conv = fromHookMessages(adopted, 'seed-context');
    // The conversation copy still carries its bookkeeping…
    expect(conv[0]!['source-id']).toBe('memory:42');
    const req = buildDriverRequest({ model: 'm', maxTokens: 100, system: 's', messages: stripBookkeeping(conv), tools: [], promptCacheKey: 'cap:1.0.0' });
    const bytes = JSON.stringify(req);
    // …the payload does not.
    expect(bytes).not.toMatch(/msg_[0-9a-f]{8}-/);
    expect(bytes).not.toContain('memory:42');
    expect(bytes).not.toContain('inserted');
    expect(bytes).not.toContain('source');
    expect(req.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'remember: the sky is green' }] }]);
  });
});

describe('validateToolPairs', () => {
  const call = (id: string) => ({ role: 'assistant', content: JSON.stringify([{ type: 'tool_call', id, name: 'echo', input: {} }]) });
  const result = (id: string) => ({ role: 'tool', content: JSON.stringify({ __murmur_tool_msg__: true, tool_call_id: id, is_error: false, body: 'ok' }) });

  it('accepts matched pairs and plain text', () => {
    expect(validateToolPairs([{ role: 'user', content: 'hi' }, call('a'), result('a'), { role: 'assistant', content: 'done' }])).toEqual({ ok: true });
    expect(validateToolPairs([])).toEqual({ ok: true });
  });

  it('refuses an orphan result, an unanswered call, a repeated id, an unreadable tool envelope, an unknown role', () => {
    expect(validateToolPairs([result('a')])).toMatchObject({ ok: false, reason: expect.stringMatching(/answers no open tool call/) });
    expect(validateToolPairs([call('a'), { role: 'user', content: 'x' }])).toMatchObject({ ok: false, reason: expect.stringMatching(/not answered/) });
    expect(validateToolPairs([call('a'), result('a'), call('a'), result('a')])).toMatchObject({ ok: false, reason: expect.stringMatching(/repeats/) });
    expect(validateToolPairs([{ role: 'tool', content: 'plain text' }])).toMatchObject({ ok: false, reason: expect.stringMatching(/no tool envelope/) });
    expect(validateToolPairs([{ role: 'system', content: 'x' }])).toMatchObject({ ok: false, reason: expect.stringMatching(/role "system"/) });
  });

  it('works on conversation messages too', () => {
    const conv = fromHookMessages([call('z'), result('z')], 'replace-context');
    expect(validateToolPairs(conv)).toEqual({ ok: true });
    expect(validateToolPairs(conv.slice(0, 1))).toMatchObject({ ok: false });
  });
});

describe('reading a hook-output', () => {
  it('accepts the seven arms with their payloads', () => {
    expect(readHookOutput({ tag: 'none' })).toEqual({ tag: 'none' });
    expect(readHookOutput({ tag: 'deny', val: 'x' })).toEqual({ tag: 'deny', val: 'x' });
    expect(readHookOutput({ tag: 'seed-context', val: [{ role: 'user', content: 'c', id: undefined, sourceId: 's', insertedBy: undefined }] })).toEqual({
      tag: 'seed-context',
      val: [{ role: 'user', content: 'c', sourceId: 's' }],
    });
    expect(readHookOutput({ tag: 'write-manifests', val: [{ binaryName: 'jq', content: 'y' }] })).toEqual({
      tag: 'write-manifests',
      val: [{ binaryName: 'jq', content: 'y' }],
    });
  });

  it('names what cannot be read', () => {
    expect(readHookOutput('none')).toBe('expected a hook-output variant, got a string');
    expect(readHookOutput(undefined)).toBe('expected a hook-output variant, got nothing');
    expect(readHookOutput({ tag: 'allow', val: 'x' })).toBe("unknown hook-output arm 'allow'");
    expect(readHookOutput({ tag: 'deny', val: 7 })).toBe("arm 'deny' carries a number, expected a string");
    expect(readHookOutput({ tag: 'replace-context', val: [{ role: 'user' }] })).toBe("arm 'replace-context' message 0 is not a {role, content} record");
    expect(readHookOutput({ tag: 'write-manifests', val: [{ binaryName: 1, content: '' }] })).toMatch(/entry 0 is not a \{binary-name, content\} record/);
  });
});

describe('small helpers', () => {
  it('safeBinaryName: one directory name under tools/', () => {
    for (const ok of ['jq', 'git-lfs', 'a.b', 'x_1']) expect(safeBinaryName(ok), ok).toBe(true);
    for (const bad of ['', '.', '..', '../x', 'a/b', 'a\\b', 'a..b', '/abs', 'nul\0']) expect(safeBinaryName(bad), bad).toBe(false);
  });

  it('utf8Window: longest prefix within max ending on a boundary; out-of-range past the end or inside a character', () => {
    const b = Buffer.from('a€b'); // 1 + 3 + 1 bytes
    expect(utf8Window(b, 0n, 1n)).toBe('a');
    expect(utf8Window(b, 0n, 3n)).toBe('a');
    expect(utf8Window(b, 0n, 4n)).toBe('a€');
    expect(utf8Window(b, 1n, 0n)).toBe('');
    expect(utf8Window(b, 4n, 10n)).toBe('b');
    expect(utf8Window(b, 5n, 10n)).toBe('');
    expect(() => utf8Window(b, 6n, 1n)).toThrow('out-of-range');
    expect(() => utf8Window(b, 2n, 1n)).toThrow('out-of-range');
  });
});
