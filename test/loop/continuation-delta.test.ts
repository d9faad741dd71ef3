/**
 * The continuation delta holds the assistant's own last turn (the reference records the length it
 * sent before the reply): a real stateful driver component (test/fixtures/components/
 * driver-continuation) refuses a delta that hands it a tool result without the tool call it answers.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSession, stage } from '../../runtime/compose/open.ts';
import type { CapsuleSession } from '../../runtime/loop/capsule-session.ts';
import { readTrace } from '../../runtime/trace/read.ts';
import { ECHO_TOOL, makeRegistry, tmp } from './kit.ts';

let session: CapsuleSession | undefined;
afterEach(async () => {
  await session?.close('ok');
  session = undefined;
});

describe('continuation delta', () => {
  it('a driver continuing its state is sent its own last turn first, then the tool result answering it', async () => {
    const registry = await makeRegistry([{ component: 'driver-continuation', name: 'cont-driver', version: '0.1.0', runtime: 'driver' }, ECHO_TOOL]);
    const capsuleDir = tmp('capsule-');
    writeFileSync(
      join(capsuleDir, 'murmur.yaml'),
      [
        'name: continuation-delta',
        'version: 1.0.0',
        'artifacts:',
        '  - {name: cont-driver, version: 0.1.0, runtime: driver}',
        '  - {name: echo, version: 1.0.0, runtime: tool}',
        'inference:',
        '  driver: {artifact: cont-driver}',
        '  model: m',
        '  endpoint: http://127.0.0.1:9/unused',
      ].join('\n'),
    );
    const hostEnv = { PATH: process.env.PATH };
    const staged = await stage({ capsuleDir, registryDir: registry, workRoot: tmp('work-'), hostEnv });
    session = await openSession(staged, { hostEnv });
    const r = await session.runTask({ taskId: 't-1', contextId: 'ctx-1', text: 'go', source: 'task_md' });
    expect(r.reason).toBeUndefined();
    expect(r.exit).toBe('completed');
    const inference = readTrace(staged.workdir.trace).events.filter((e) => e.event_type === 'inference');
    expect(inference.map((e) => e.continued)).toEqual([undefined, true]);
    expect(inference.map((e) => e.decision)).toEqual(['tool_call', 'end_turn']);
    // Two JS-engine components load on first use: generous on a loaded shared machine.
  }, 240_000);
});
