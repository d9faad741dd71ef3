/** `mur trace report`'s redundant-read detection over a real trace file, shell calls included. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../runtime/cli/main.ts';

async function report(events: Record<string, unknown>[]): Promise<{ redundant: { redundant: { index: number; toolName: string }[] } }> {
  const dir = mkdtempSync(join(tmpdir(), 'trace-report-'));
  writeFileSync(join(dir, 'trace.jsonl'), `${events.map((e, i) => JSON.stringify({ session_id: 's', timestamp: i, seq: i + 1, ...e })).join('\n')}\n`);
  const out: string[] = [];
  expect(
    await main(
      ['trace', 'report', dir, '--json'],
      (s) => out.push(s),
      () => {},
    ),
  ).toBe(0);
  return JSON.parse(out.join('\n'));
}

const read = (turn: number) => ({ event_type: 'tool_call', turn, tool_name: 'cat-file', input: { path: 'src/a.ts' }, state_effect: 'read', status: 'ok' });

describe('mur trace report: redundant reads', () => {
  it('a second read of the same file with nothing in between is reported', async () => {
    const r = await report([read(1), read(2)]);
    expect(r.redundant.redundant).toMatchObject([{ index: 1, toolName: 'cat-file' }]);
  });

  it('a shell command between the reads may have changed the file: not redundant', async () => {
    const r = await report([read(1), { event_type: 'shell', turn: 2, binary: '/usr/bin/sed', argv: ['-i', 's/a/b/', 'src/a.ts'], exit_code: 0 }, read(3)]);
    expect(r.redundant.redundant).toEqual([]);
  });
});
