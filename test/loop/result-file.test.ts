/**
 * `out/result.txt` (runtime/loop/agent-loop.ts writeResult) through a real session: each task's
 * answer replaces the file whole, a shorter one too, and it is written on the main thread without
 * a trip through the threadpool (no file handle or fs request of the promises API while a task
 * writes it; asserted on the resources created, async_hooks).
 */
import { createHook } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { capsuleYaml, driverDef, openKit, type Kit } from './kit.ts';

let kit: Kit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

describe('the result file', () => {
  it('holds each task’s answer whole, a shorter one after a longer one too, written without the threadpool', async () => {
    kit = await openKit({
      yaml: capsuleYaml({ tools: [] }),
      artifacts: [driverDef('anthropic')],
      script: { turns: [{ text: 'a long first answer, longer than the next' }, { text: 'short' }] },
    });
    const result = join(kit.session.staged.workdir.dir, 'out', 'result.txt');
    expect((await kit.session.runTask({ taskId: 't1', contextId: 'c1', text: 'one', source: 'task_md' })).exit).toBe('completed');
    expect(readFileSync(result, 'utf8')).toBe('a long first answer, longer than the next');
    const fsResources: string[] = [];
    const hook = createHook({
      init(_id, type) {
        if (type === 'FILEHANDLE' || type === 'FSREQPROMISE' || type === 'FILEHANDLECLOSEREQ') fsResources.push(type);
      },
    }).enable();
    try {
      expect((await kit.session.runTask({ taskId: 't2', contextId: 'c2', text: 'two', source: 'task_md' })).exit).toBe('completed');
    } finally {
      hook.disable();
    }
    expect(readFileSync(result, 'utf8')).toBe('short');
    expect(fsResources).toEqual([]);
  });
});
