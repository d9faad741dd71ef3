/**
 * The host interfaces of the hook world, called from a real hook component: run-inference
 * (runtime-inference.md), tokens, task-io/read (UTF-8 windows, io-error values), conversation/read
 * (newest first, cursor, limit clamped to 1..=100, not-granted). The script hook runs the ops at
 * on-inference and returns their results as an artifact.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { harness, scriptHook, INFERENCE_EV, type Harness } from './harness.ts';
import type { HookMessage, StagedHook } from '../../runtime/hooks/types.ts';

const open: Harness[] = [];
afterAll(async () => {
  await Promise.all(open.map((h) => h.bus.close()));
});

type OpResult = { ok?: unknown; err?: unknown };

async function probe(
  ops: Record<string, unknown>[],
  extra: Partial<StagedHook> = {},
  setup?: (h: Harness) => void,
): Promise<{ h: Harness; results: OpResult[] }> {
  const h = await harness([
    await scriptHook('probe', { 'on-inference': { ops, ret: { tag: 'artifact', val: '{"ops":$ops}' } } }, { binding: 'on-inference', ...extra }),
  ]);
  open.push(h);
  setup?.(h);
  const [a] = await h.bus.inference(INFERENCE_EV);
  expect(a, h.log('probe')).toBeDefined();
  return { h, results: (JSON.parse(a!) as { ops: OpResult[] }).ops };
}

describe('murmur:runtime/inference', () => {
  it('model none: the host decides (the request carries no model); the response fields cross as given', async () => {
    const msgs: HookMessage[] = [{ role: 'user', content: 'hello' }];
    const { h, results } = await probe([{ op: 'infer', messages: msgs }]);
    expect(h.inferences).toEqual([{ hook: 'probe', req: { messages: [{ role: 'user', content: 'hello' }] } }]);
    expect(results[0]).toEqual({ ok: { text: 'completion of 1 message(s)', modelUsed: 'primary-model', inputTokens: 11, outputTokens: 7 } });
  });

  it('system-prompt and model some(…) reach the service verbatim', async () => {
    const { h, results } = await probe([{ op: 'infer', messages: [], systemPrompt: 'Be brief.', model: 'small-model' }]);
    expect(h.inferences[0]!.req).toEqual({ messages: [], systemPrompt: 'Be brief.', model: 'small-model' });
    expect((results[0]!.ok as { modelUsed: string }).modelUsed).toBe('small-model');
  });

  it('a rejected some(m) returns err to the hook — never a silent fallback to the primary model', async () => {
    const { h, results } = await probe([{ op: 'infer', messages: [], model: 'no-such-model' }], {}, (x) => {
      x.services.infer = async (req) => {
        if (req.model) throw new Error(`provider rejected model ${req.model}`);
        return { text: 'fallback', modelUsed: 'primary-model', inputTokens: 1n, outputTokens: 1n };
      };
    });
    expect(results[0]).toEqual({ err: 'provider rejected model no-such-model' });
    expect(h.inferences).toHaveLength(1);
  });
});

describe('murmur:runtime/tokens', () => {
  it('count is the runtime’s own count', async () => {
    const { results } = await probe([{ op: 'count', text: 'one two three four' }]);
    expect(results[0]).toEqual({ ok: 4 });
  });
});

describe('murmur:task-io/read', () => {
  const io = { input: { asGiven: 'héllo wörld\n\n# Reopen feedback\n- fix it', original: 'héllo wörld' }, output: 'done ✓' };

  it('without the grant every call is not-granted', async () => {
    const { results } = await probe([{ op: 'input-len' }, { op: 'read-input' }, { op: 'output-len' }, { op: 'read-output' }], {}, (h) => {
      h.services.io = io;
    });
    expect(results).toEqual([{ err: 'not-granted' }, { err: 'not-granted' }, { err: 'not-granted' }, { err: 'not-granted' }]);
  });

  it('no task, and no output yet', async () => {
    const a = await probe([{ op: 'input-len' }, { op: 'output-len' }], { grants: { taskIoRead: true } });
    expect(a.results).toEqual([{ err: 'no-task' }, { err: 'no-task' }]);
    const b = await probe([{ op: 'input-len' }, { op: 'output-len' }, { op: 'read-output' }], { grants: { taskIoRead: true } }, (h) => {
      h.services.io = { input: io.input };
    });
    expect(b.results).toEqual([{ ok: Buffer.byteLength(io.input.asGiven) }, { err: 'no-output' }, { err: 'no-output' }]);
  });

  it('as-given vs original, byte lengths, windows that end on a character boundary, out-of-range', async () => {
    const { results } = await probe(
      [
        { op: 'input-len', form: 'as-given' },
        { op: 'input-len', form: 'original' },
        { op: 'read-input', form: 'original', offset: 0, max: 2 }, // 'h' + the first byte of 'é' -> 'h'
        { op: 'read-input', form: 'original', offset: 1, max: 2 }, // 'é'
        { op: 'read-input', form: 'original', offset: 2, max: 4 }, // inside 'é'
        { op: 'read-input', form: 'original', offset: 13, max: 4 }, // past the end (12 bytes... 13)
        { op: 'read-input', form: 'original', offset: 0, max: 1000 },
        { op: 'read-input', form: 'as-given', offset: 14, max: 1000 },
        { op: 'output-len' },
        { op: 'read-output', offset: 0, max: 7 }, // 'done ' + 3 bytes of ✓ -> 'done '
        { op: 'read-output', offset: 5, max: 3 },
        { op: 'read-output', offset: 8, max: 3 },
      ],
      { grants: { taskIoRead: true } },
      (h) => {
        h.services.io = io;
      },
    );
    expect(Buffer.byteLength('héllo wörld')).toBe(13);
    expect(results).toEqual([
      { ok: Buffer.byteLength(io.input.asGiven) },
      { ok: 13 },
      { ok: 'h' },
      { ok: 'é' },
      { err: 'out-of-range' },
      { ok: '' },
      { ok: 'héllo wörld' },
      { ok: '\n# Reopen feedback\n- fix it' },
      { ok: 8 },
      { ok: 'done ' },
      { ok: '✓' },
      { ok: '' },
    ]);
  });

  it('an offset past the end is out-of-range', async () => {
    const { results } = await probe(
      [
        { op: 'read-input', offset: 100, max: 4 },
        { op: 'read-output', offset: 9, max: 1 },
      ],
      { grants: { taskIoRead: true } },
      (h) => {
        h.services.io = io;
      },
    );
    expect(results).toEqual([{ err: 'out-of-range' }, { err: 'out-of-range' }]);
  });
});

describe('murmur:conversation/read', () => {
  const record: HookMessage[] = Array.from({ length: 250 }, (_, i) => ({
    role: i % 2 ? 'assistant' : 'user',
    content: `m${i}`,
    id: `msg_${i}`,
    ...(i === 0 ? { sourceId: 'src-0', insertedBy: 'seed-context' as const } : {}),
  }));

  it('without the grant: not-granted', async () => {
    const { results } = await probe([{ op: 'read-messages', limit: 5 }], {}, (h) => {
      h.services.history = record;
    });
    expect(results).toEqual([{ err: 'not-granted' }]);
  });

  it('pages newest first with a cursor; limit clamped to 1..=100; total counts the record', async () => {
    const { results } = await probe(
      [
        { op: 'read-messages', limit: 1000 },
        { op: 'read-messages', cursor: 'c150', limit: 100 },
        { op: 'read-messages', cursor: 'c50', limit: 100 },
        { op: 'read-messages', limit: 0 },
      ],
      { grants: { conversationRead: true } },
      (h) => {
        h.services.history = record;
      },
    );
    type Page = { messages: HookMessage[]; nextCursor?: string; total: number };
    const [p1, p2, p3, p4] = results.map((r) => r.ok as Page);
    expect(p1!.messages).toHaveLength(100);
    expect(p1!.messages[0]!.content).toBe('m249');
    expect(p1!.messages[99]!.content).toBe('m150');
    expect(p1!.nextCursor).toBe('c150');
    expect(p1!.total).toBe(250);
    expect(p2!.messages.map((m) => m.content)[0]).toBe('m149');
    expect(p2!.nextCursor).toBe('c50');
    expect(p3!.messages).toHaveLength(50);
    expect(p3!.messages[49]).toEqual({ role: 'user', content: 'm0', id: 'msg_0', sourceId: 'src-0', insertedBy: 'seed-context' });
    expect(p3!.nextCursor).toBeUndefined();
    expect(p4!.messages.map((m) => m.content)).toEqual(['m249']);
  });

  it('an invalid cursor, an unavailable record, and an empty record', async () => {
    const a = await probe(
      [
        { op: 'read-messages', cursor: 'bogus', limit: 5 },
        { op: 'read-messages', cursor: 'c999', limit: 5 },
      ],
      { grants: { conversationRead: true } },
      (h) => {
        h.services.history = record;
      },
    );
    expect(a.results).toEqual([{ err: 'invalid-cursor' }, { err: 'invalid-cursor' }]);
    const b = await probe([{ op: 'read-messages', limit: 5 }], { grants: { conversationRead: true } }, (h) => {
      h.services.conversation = () => {
        throw new Error('record file is locked');
      };
    });
    expect(b.results).toEqual([{ err: 'unavailable: record file is locked' }]);
    const c = await probe([{ op: 'read-messages', limit: 5 }], { grants: { conversationRead: true } });
    expect(c.results).toEqual([{ ok: { messages: [], total: 0 } }]);
  });
});
