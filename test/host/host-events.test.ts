/**
 * Notification host imports (runtime/host/protocol.ts ONE_WAY_IMPORTS: murmur:text/chunks) through
 * a real component (the sandbox probe): the guest posts them and goes on without waiting for the
 * main thread, which runs them in order before the call's answer; a failing one is a line on
 * stderr (E-RUN-085), never the guest's problem.
 */
import { describe, expect, it } from 'vitest';
import { op, probe, quietImports } from './probe.ts';

describe('notification host imports', () => {
  it('emit-chunk does not hold the guest: the call answers while the host still handles the chunk, which it got first', async () => {
    const seen: string[] = [];
    const x = await probe(
      {},
      {
        deadlineMs: 20_000,
        imports: {
          ...quietImports,
          // Never settles: a guest waiting for it would run into its deadline.
          'murmur:text/chunks': { emitChunk: (t: string) => (seen.push(`chunk ${t}`), new Promise(() => {})), emitThinkingChunk: () => {} },
        },
      },
    );
    try {
      const r = await op(x, { op: 'chunk', text: 'hello' });
      seen.push(`answer ${String(r.body.value)}`);
      const again = await op(x, { op: 'chunk', text: 'again' });
      seen.push(`answer ${String(again.body.value)}`);
      expect(seen).toEqual(['chunk hello', 'answer sent', 'chunk again', 'answer sent']);
    } finally {
      await x.close();
    }
  });

  it('a failing emit-chunk is said on stderr with E-RUN-085 and the call goes on', async () => {
    const x = await probe(
      {},
      {
        imports: {
          ...quietImports,
          'murmur:text/chunks': {
            emitChunk: () => {
              throw new Error('the stream is gone');
            },
            emitThinkingChunk: () => {},
          },
        },
      },
    );
    const lines: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((s: string | Uint8Array) => (lines.push(String(s)), true)) as typeof process.stderr.write;
    try {
      const r = await op(x, { op: 'chunk', text: 'hello' });
      expect(r.body.value).toBe('sent');
    } finally {
      process.stderr.write = write;
      await x.close();
    }
    expect(lines.join('')).toMatch(/sandbox-probe: host import murmur:text\/chunks#emitChunk failed: the stream is gone \[E-RUN-085\]/);
  });
});
