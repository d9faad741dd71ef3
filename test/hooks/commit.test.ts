/**
 * Every row of the commit table (wit-interfaces.md "What each handler can commit"): each handler
 * returns each of the six non-`none` arms in turn; exactly the spec's arm is committed, every other
 * one is a loud non-fatal fault (a log line naming hook, handler and arm + `hook_dispatch_error`,
 * except at on-stage where the trace does not exist yet).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { COMMIT_TABLE, HANDLERS, type Arm, type Handler } from '../../runtime/contracts/commit-table.ts';
import {
  harness,
  scriptHook,
  compactionEv,
  INFERENCE_EV,
  SESSION_CTX,
  SESSION_END,
  SHELL_EV,
  SHELL_OUTCOME,
  TASK_END,
  TASK_START,
  TOOL_EV,
  TOOL_OUTCOME,
  type Harness,
} from './harness.ts';

/** The spec's table, written out independently of runtime/contracts/commit-table.ts. */
const SPEC: Record<Handler, Arm | 'none'> = {
  'on-stage': 'write-manifests',
  'on-session-start': 'none',
  'on-task-start': 'seed-context',
  'on-inference': 'artifact',
  'on-tool-call': 'deny',
  'on-shell': 'deny',
  'on-compaction': 'replace-context',
  'on-task-end': 'reopen-task',
  'on-session-end': 'none',
};

const ARM_VALUES: Record<Exclude<Arm, 'none'>, unknown> = {
  'replace-context': [{ role: 'user', content: 'short summary' }],
  'write-manifests': [{ binaryName: 'made-by-hook', content: 'name: made-by-hook\n' }],
  artifact: '{"kind":"note"}',
  'reopen-task': 'please try again',
  'seed-context': [{ role: 'user', content: 'remembered fact' }],
  deny: 'not allowed',
};
const NON_NONE = Object.keys(ARM_VALUES) as Exclude<Arm, 'none'>[];

const open: Harness[] = [];
afterAll(async () => {
  await Promise.all(open.map((h) => h.bus.close()));
});

it('the commit table in runtime/contracts/commit-table.ts is the spec table', () => {
  for (const h of HANDLERS) expect(COMMIT_TABLE[h].committedArm, h).toBe(SPEC[h]);
  expect(COMMIT_TABLE['on-tool-call'].decisionPointOnly).toBe(true);
  expect(COMMIT_TABLE['on-shell'].decisionPointOnly).toBe(true);
});

/** A hook bound to `handler`, declaring the policy that handler honors, returning the six arms in order. */
async function armsHook(handler: Handler, key: string = handler): Promise<Harness> {
  const steps = NON_NONE.map((arm) => ({ ret: { tag: arm, val: ARM_VALUES[arm] } }));
  const policy = COMMIT_TABLE[handler].policy;
  const h = await harness([await scriptHook('arms', { [key]: steps }, { binding: handler, commitPolicy: policy })]);
  open.push(h);
  return h;
}

function expectFault(h: Harness, handler: string, arm: string, n: number): void {
  const lines = h.log('arms').trim().split('\n').filter(Boolean);
  const line = lines.find((l) => l.includes(`${handler} returned arm '${arm}'`));
  expect(line, `log line for ${arm}`).toMatch(new RegExp(`hook arms: ${handler} returned arm '${arm}'.*discarded`));
  const ev = h.events('hook_dispatch_error').filter((e) => e.arm === arm);
  expect(ev.length, `hook_dispatch_error for ${arm}`).toBe(n);
  if (n) expect(ev[0]).toMatchObject({ hook_name: 'arms', event: handler, arm });
}

describe('each handler commits exactly its arm', () => {
  it('on-stage: write-manifests is written; every other arm is logged (no trace: it does not exist yet)', async () => {
    // Staging runs each hook in a throwaway instance, so one hook per arm.
    const hooks = await Promise.all(
      NON_NONE.map((arm) =>
        scriptHook(`stage-${arm}`, { 'on-stage': { ret: { tag: arm, val: ARM_VALUES[arm] } } }, { binding: 'on-stage', commitPolicy: 'write-manifests' }),
      ),
    );
    const h = await harness(hooks, {}, false);
    open.push(h);
    await h.bus.stage({ shellAllow: ['git'] });
    h.bus.attachTrace(h.trace);
    for (const arm of NON_NONE) {
      if (arm === 'write-manifests') {
        expect(readFileSync(join(h.dir, 'tools', 'made-by-hook', 'murmur.yaml'), 'utf8')).toBe('name: made-by-hook\n');
        expect(h.log(`stage-${arm}`)).toBe('');
      } else {
        expect(h.log(`stage-${arm}`)).toMatch(new RegExp(`hook stage-${arm}: on-stage returned arm '${arm}', which on-stage does not commit.*discarded`));
      }
    }
    expect(h.events()).toEqual([]);
  });

  it('on-session-start commits nothing: every arm is a fault', async () => {
    const h = await armsHook('on-session-start');
    for (const arm of NON_NONE) {
      await h.bus.sessionStart(SESSION_CTX);
      expectFault(h, 'on-session-start', arm, 1);
    }
  });

  it('on-task-start commits seed-context only', async () => {
    const h = await armsHook('on-task-start');
    for (const arm of NON_NONE) {
      const r = await h.bus.taskStart(TASK_START);
      if (arm === 'seed-context') {
        expect(r.messages.map((m) => m.content)).toEqual(['remembered fact']);
        expect(h.events('context_seed')).toHaveLength(1);
        expect(h.events('hook_dispatch_error').filter((e) => e.arm === arm)).toHaveLength(0);
      } else {
        expect(r.messages).toEqual([]);
        expectFault(h, 'on-task-start', arm, 1);
      }
    }
  });

  it('on-inference commits artifact only', async () => {
    const h = await armsHook('on-inference');
    for (const arm of NON_NONE) {
      const r = await h.bus.inference(INFERENCE_EV);
      if (arm === 'artifact') expect(r).toEqual(['{"kind":"note"}']);
      else {
        expect(r).toEqual([]);
        expectFault(h, 'on-inference', arm, 1);
      }
    }
  });

  it('on-compaction commits replace-context only', async () => {
    const h = await armsHook('on-compaction');
    for (const arm of NON_NONE) {
      const r = await h.bus.compaction(compactionEv([{ role: 'user', content: 'a b c' }]));
      if (arm === 'replace-context') expect(r).toMatchObject({ kind: 'replaced', hook: 'arms', messages: [{ role: 'user', content: 'short summary' }] });
      else {
        expect(r).toEqual({ kind: 'none' });
        expectFault(h, 'on-compaction', arm, 1);
      }
    }
  });

  it('on-task-end commits reopen-task only', async () => {
    const h = await armsHook('on-task-end');
    for (const arm of NON_NONE) {
      const r = await h.bus.taskEnd(TASK_END);
      if (arm === 'reopen-task') expect(r).toEqual({ reopen: { hook: 'arms', feedback: 'please try again' } });
      else {
        expect(r).toEqual({});
        expectFault(h, 'on-task-end', arm, 1);
      }
    }
  });

  it('on-session-end commits nothing: every arm is a fault', async () => {
    const h = await armsHook('on-session-end');
    for (const arm of NON_NONE) {
      await h.bus.sessionEnd(SESSION_END);
      expectFault(h, 'on-session-end', arm, 1);
    }
  });

  for (const handler of ['on-tool-call', 'on-shell'] as const) {
    const ev = handler === 'on-tool-call' ? TOOL_EV : SHELL_EV;
    const outcome = handler === 'on-tool-call' ? TOOL_OUTCOME : SHELL_OUTCOME;
    it(`${handler} at the decision point: deny refuses; any other arm refuses too (fail-closed)`, async () => {
      const h = await armsHook(handler, `${handler}:decision`);
      for (const arm of NON_NONE) {
        const d = handler === 'on-tool-call' ? await h.bus.toolDecision(ev) : await h.bus.shellDecision(ev);
        expect(d.allowed, arm).toBe(false);
        if (arm === 'deny') expect(d).toMatchObject({ hook: 'arms', reason: 'not allowed' });
        else expect(d).toMatchObject({ hook: 'arms', reason: expect.stringContaining(`returned arm '${arm}'`) });
      }
    });

    it(`${handler} at the observation: every arm, deny included, is a fault honored by nothing`, async () => {
      const h = await armsHook(handler, `${handler}:observe`);
      for (const arm of NON_NONE) {
        if (handler === 'on-tool-call') await h.bus.toolObserved({ ...ev, outcome });
        else await h.bus.shellObserved({ ...ev, outcome });
        expectFault(h, handler, arm, 1);
      }
      expect(h.events('call_denied')).toEqual([]);
    });
  }
});

it('`none` is always silent', async () => {
  const h = await harness([await scriptHook('quiet', {}, {})]);
  open.push(h);
  await h.bus.sessionStart(SESSION_CTX);
  await h.bus.taskStart(TASK_START);
  await h.bus.inference(INFERENCE_EV);
  await h.bus.toolObserved({ ...TOOL_EV, outcome: TOOL_OUTCOME });
  await h.bus.shellObserved({ ...SHELL_EV, outcome: SHELL_OUTCOME });
  expect(await h.bus.compaction(compactionEv([]))).toEqual({ kind: 'none' });
  expect(await h.bus.taskEnd(TASK_END)).toEqual({});
  await h.bus.sessionEnd(SESSION_END);
  expect(h.events()).toEqual([]);
  // Each call is still timed: one hook_call per dispatch, outcome none.
  const calls = h.events('hook_call');
  expect(calls.map((e) => e.event)).toEqual([
    'on-session-start',
    'on-task-start',
    'on-inference',
    'on-tool-call',
    'on-shell',
    'on-compaction',
    'on-task-end',
    'on-session-end',
  ]);
  expect(calls.every((e) => e.outcome === 'none' && e.hook_name === 'quiet' && typeof e.duration_ms === 'number')).toBe(true);
  expect(h.log('quiet')).toBe('');
  expect(existsSync(join(h.dir, 'tools'))).toBe(false);
});

describe('commit_policy decides too', () => {
  it('a committable arm from a hook whose commit_policy is none is discarded loudly', async () => {
    const h = await harness([
      await scriptHook(
        'observer',
        {
          'on-task-end': { ret: { tag: 'reopen-task', val: 'again' } },
          'on-compaction': { ret: { tag: 'replace-context', val: [{ role: 'user', content: 'x' }] } },
        },
        { commitPolicy: 'none' },
      ),
    ]);
    open.push(h);
    expect(await h.bus.taskEnd(TASK_END)).toEqual({});
    expect(await h.bus.compaction(compactionEv([]))).toEqual({ kind: 'none' });
    expect(h.log('observer')).toMatch(/on-task-end returned arm 'reopen-task', but the hook declares commit_policy 'none'; discarded/);
    expect(h.events('hook_dispatch_error').map((e) => [e.event, e.arm])).toEqual([
      ['on-task-end', 'reopen-task'],
      ['on-compaction', 'replace-context'],
    ]);
  });

  it('an artifact needs no policy: on-inference commits it from a commit_policy none hook', async () => {
    const h = await harness([await scriptHook('art', { 'on-inference': { ret: { tag: 'artifact', val: '{"a":1}' } } }, { binding: 'on-inference' })]);
    open.push(h);
    expect(await h.bus.inference(INFERENCE_EV)).toEqual(['{"a":1}']);
  });

  it('an artifact that is not a JSON object is a fault, not an artifact', async () => {
    const h = await harness([
      await scriptHook(
        'art',
        { 'on-inference': [{ ret: { tag: 'artifact', val: 'not json' } }, { ret: { tag: 'artifact', val: '[1,2]' } }] },
        { binding: 'on-inference' },
      ),
    ]);
    open.push(h);
    expect(await h.bus.inference(INFERENCE_EV)).toEqual([]);
    expect(await h.bus.inference(INFERENCE_EV)).toEqual([]);
    expect(h.events('hook_dispatch_error').map((e) => e.arm)).toEqual(['artifact', 'artifact']);
    expect(h.log('art')).toMatch(/artifact that is not a JSON object \(not json\)/);
  });

  it('several blocking hooks: all artifacts are collected; the first reopen wins', async () => {
    const a = await scriptHook(
      'first',
      { 'on-inference': { ret: { tag: 'artifact', val: '{"n":1}' } }, 'on-task-end': { ret: { tag: 'reopen-task', val: 'from first' } } },
      { commitPolicy: 'reopen-task' },
    );
    const b = await scriptHook(
      'second',
      { 'on-inference': { ret: { tag: 'artifact', val: '{"n":2}' } }, 'on-task-end': { ret: { tag: 'reopen-task', val: 'from second' } } },
      { commitPolicy: 'reopen-task' },
    );
    const h = await harness([a, b]);
    open.push(h);
    expect(await h.bus.inference(INFERENCE_EV)).toEqual(['{"n":1}', '{"n":2}']);
    expect(await h.bus.taskEnd(TASK_END)).toEqual({ reopen: { hook: 'first', feedback: 'from first' } });
    expect(h.log('second')).toMatch(/superseded by hook 'first'/);
  });
});

describe('handler errors are logged and the session goes on', () => {
  it('a WIT err at an observation handler: log line and hook_dispatch_error arm error', async () => {
    const h = await harness([await scriptHook('grumpy', { 'on-session-start': { err: 'cannot start' }, 'on-inference': { err: 'bad turn' } })]);
    open.push(h);
    await h.bus.sessionStart(SESSION_CTX);
    expect(await h.bus.inference(INFERENCE_EV)).toEqual([]);
    expect(h.log('grumpy')).toMatch(/on-session-start returned err: cannot start/);
    expect(h.events('hook_dispatch_error').map((e) => [e.event, e.arm])).toEqual([
      ['on-session-start', 'error'],
      ['on-inference', 'error'],
    ]);
  });

  it('a trap at an observation handler: logged, the next event reaches a fresh instance', async () => {
    const h = await harness([
      await scriptHook('crashy', { 'on-inference': [{ trap: true }, { ret: { tag: 'artifact', val: '{"after":"trap"}' } }] }, { binding: 'on-inference' }),
    ]);
    open.push(h);
    expect(await h.bus.inference(INFERENCE_EV)).toEqual([]);
    expect(h.events('hook_dispatch_error')[0]).toMatchObject({ event: 'on-inference', arm: 'trap' });
    // Script state is per instance: the fresh instance starts at call 1 again (a trap loses state).
    expect(await h.bus.inference(INFERENCE_EV)).toEqual([]);
  });
});
