/**
 * Hooks end to end through real sessions: staging (stage → open, the path `mur run` takes), the real
 * agent loop, a real driver component talking HTTP to the scripted provider, real hook components.
 */
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { publish } from '../../runtime/registry/registry.ts';
import { openSession, stage } from '../../runtime/compose/open.ts';
import { SILENT_SINK } from '../../runtime/loop/capsule-session.ts';
import { readTrace } from '../../runtime/trace/read.ts';
import { startScriptedProvider, type Script } from '../provider/scripted-provider.ts';
import { API_KEY, ECHO_TOOL, driverDef, makeRegistry, openKit, tmp, type Kit, PROBE_TOOL } from '../loop/kit.ts';
import { variantFixture } from './fixtures.ts';
import { hookArtifact, hookCapsuleYaml, openHookCapsule, type HookDef } from './hook-capsule.ts';

let kit: Kit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

async function open(hooks: HookDef[], script: Script, extra = ''): Promise<Kit> {
  kit = await openHookCapsule(hooks, script, extra);
  return kit;
}

const events = (k: Kit, type?: string) => readTrace(k.session.staged.workdir.trace).events.filter((e) => type === undefined || e.event_type === type);
const hookLog = (k: Kit, name: string) => {
  const f = join(k.session.staged.workdir.dir, 'logs', `hook-${name}.log`);
  return existsSync(f) ? readFileSync(f, 'utf8') : '';
};
const recs = (k: Kit, name: string) =>
  hookLog(k, name)
    .split('\n')
    .filter((l) => l.startsWith('{"rec"'))
    .map((l) => JSON.parse(l) as { rec: string; n: number; ev: Record<string, unknown> });
const bodies = (k: Kit) => k.provider.requests.map((r) => JSON.stringify(r.body));

/** A window the first turn already fills past the threshold. */
const SMALL_WINDOW = 'context:\n  max_tokens: 60\n';

const TOOL_THEN_DONE: Script = { turns: [{ toolCalls: [{ name: 'echo', input: { text: 'hi' } }] }, { text: 'done' }] };
const TASK = { taskId: 't1', contextId: 'ctx-1', text: 'please echo hi', source: 'task_md' as const };

describe('policy hooks in a session', () => {
  it('deny: the call is not made, the agent reads the refusal, call_denied is traced and no tool_call', async () => {
    const k = await open(
      [
        {
          name: 'guard',
          contract: 'binding: on-tool-call\ncommit_policy: deny\n',
          script: {
            'on-tool-call:decision': { record: true, ret: { tag: 'deny', val: 'echo is not allowed today' } },
            'on-tool-call:observe': { record: true },
          },
        },
      ],
      TOOL_THEN_DONE,
    );
    // Hooks are not tools: the model never sees them.
    expect(k.session.toolInventory().map((t) => t.name)).toEqual(['echo']);
    const r = await k.session.runTask(TASK);
    expect(r.exit).toBe('completed');
    expect(events(k, 'call_denied')).toEqual([
      expect.objectContaining({ hook: 'guard', reason: 'echo is not allowed today', tool_name: 'echo', kind: 'tool' }),
    ]);
    expect(events(k, 'tool_call')).toEqual([]);
    const second = bodies(k)[1]!;
    expect(second).toContain("Refused by policy hook 'guard': echo is not allowed today");
    expect(second).toContain('Retrying the same call unchanged will be refused again');
    // The hook saw the exact input JSON before the call; nothing ran, so no observation followed.
    const seen = recs(k, 'guard');
    expect(seen.map((x) => x.rec)).toEqual(['on-tool-call:decision']);
    expect(JSON.parse(seen[0]!.ev.input as string)).toEqual({ text: 'hi' });
  });

  // hooks.md: "A returned deny, a crash, a call that outruns its deadline, a memory-limit kill, a
  // return the runtime cannot read, a deny with an empty reason, and any other hook-output arm all
  // refuse the call, with a reason naming the hook and the defect." Each, through a real session.
  const FAIL_CLOSED: Array<[string, Record<string, unknown>, RegExp, Record<string, unknown>?]> = [
    ['a returned err', { err: 'policy store offline' }, /policy hook 'guard' returned err: policy store offline/],
    ['a call that outruns its deadline', { loop: true }, /did not answer within its 1000 ms deadline/, { limits: { hook_deadline_seconds: 1 } }],
    ['a memory-limit kill', { balloon: 8 }, /killed at its 64 MiB memory limit/, { limits: { memory_bytes: 64 * 1048576 } }],
    ['a return it cannot read', { ret: { tag: 'deny', val: 42 } }, /policy hook 'guard'/],
    ['a deny with an empty reason', { ret: { tag: 'deny', val: '  ' } }, /returned deny with an empty reason/],
    ['any other arm', { ret: { tag: 'replace-context', val: [] } }, /returned arm 'replace-context', which is not an answer at the decision point/],
  ];
  for (const [what, step, message, caps] of FAIL_CLOSED) {
    it(`fail-closed in a session: ${what} refuses the call, names the hook and the defect, and the session goes on`, async () => {
      const k = await open(
        [{ name: 'guard', contract: 'binding: on-tool-call\ncommit_policy: deny\n', script: { 'on-tool-call:decision': step }, ...(caps ? { caps } : {}) }],
        TOOL_THEN_DONE,
      );
      const r = await k.session.runTask(TASK);
      expect(r.exit).toBe('completed');
      expect(events(k, 'tool_call')).toEqual([]);
      expect(events(k, 'call_denied')).toEqual([expect.objectContaining({ hook: 'guard', tool_name: 'echo', fail_closed: true })]);
      expect(String(events(k, 'call_denied')[0]!.reason)).toMatch(message);
      expect(bodies(k)[1]).toContain("Refused by policy hook 'guard'");
    }, 60_000);
  }

  it('fail-closed: a policy hook that traps refuses the call and the session goes on', async () => {
    const k = await open(
      [{ name: 'guard', contract: 'binding: on-tool-call\ncommit_policy: deny\n', script: { 'on-tool-call:decision': { trap: true } } }],
      TOOL_THEN_DONE,
    );
    const r = await k.session.runTask(TASK);
    expect(r.exit).toBe('completed');
    expect(events(k, 'call_denied')[0]).toMatchObject({ hook: 'guard', fail_closed: true });
    expect(events(k, 'tool_call')).toEqual([]);
    expect(bodies(k)[1]).toMatch(/policy hook 'guard' crashed/);
  });

  it('a clean none lets the call run; the policy hook then observes it', async () => {
    const k = await open(
      [
        {
          name: 'guard',
          contract: 'binding: on-tool-call\ncommit_policy: deny\n',
          script: { 'on-tool-call:decision': { record: true }, 'on-tool-call:observe': { record: true } },
        },
      ],
      TOOL_THEN_DONE,
    );
    await k.session.runTask(TASK);
    expect(events(k, 'tool_call')).toHaveLength(1);
    expect(recs(k, 'guard').map((x) => x.rec)).toEqual(['on-tool-call:decision', 'on-tool-call:observe']);
    expect(recs(k, 'guard')[1]!.ev.outcome).toMatchObject({ status: 'ok' });
  });
});

describe('observation after a tool that errors', () => {
  it('on-tool-call observes a call that returned an error result and one that trapped, each with status error', async () => {
    const watch: HookDef = { name: 'watch', contract: 'binding: on-tool-call\n', script: { 'on-tool-call': { record: true } } };
    kit = await openKit({
      yaml: hookCapsuleYaml([watch]).replace(
        '  - {name: echo, version: 1.0.0, runtime: tool}',
        '  - {name: echo, version: 1.0.0, runtime: tool}\n  - {name: probe, version: 1.0.0, runtime: tool}',
      ),
      artifacts: [driverDef('anthropic'), ECHO_TOOL, PROBE_TOOL, hookArtifact(watch)],
      script: {
        turns: [{ toolCalls: [{ name: 'probe', input: { op: 'no-such-op' } }] }, { toolCalls: [{ name: 'probe', input: { op: 'trap' } }] }, { text: 'done' }],
      },
    });
    const r = await kit.session.runTask(TASK);
    expect(r.exit).toBe('completed');
    expect(events(kit, 'tool_call').map((e) => e.status)).toEqual(['error', 'error']);
    // No decision point without commit_policy deny: the observation alone, once per call.
    const seen = recs(kit, 'watch');
    expect(seen.map((x) => [x.rec, (x.ev.outcome as { status?: string } | undefined)?.status, x.ev.toolName])).toEqual([
      ['on-tool-call', 'error', 'probe'],
      ['on-tool-call', 'error', 'probe'],
    ]);
  });
});

describe('shell policy hooks in a session', () => {
  const SHELL_CAPS = 'capabilities:\n  shell:\n    allow: [make, sh]\n';
  const guard: HookDef = {
    name: 'guard',
    contract: 'binding: on-shell\ncommit_policy: deny\n',
    script: {
      'on-shell:decision': [{ record: true, ret: { tag: 'deny', val: 'no builds on Sundays' } }, { record: true }],
      'on-shell:observe': { record: true },
    },
  };

  it('the policy hook decides on the resolved identity (binary path, argv, recipe body) before make runs', async () => {
    const k = await open([guard], { turns: [{ toolCalls: [{ name: 'make', input: { command: 'build' } }] }, { text: 'ok' }] }, SHELL_CAPS);
    writeFileSync(join(k.session.staged.workdir.dir, 'Makefile'), 'build:\n\techo building > built.txt\n');
    const r = await k.session.runTask(TASK);
    expect(r.exit).toBe('completed');
    const seen = recs(k, 'guard');
    expect(seen.map((x) => x.rec)).toEqual(['on-shell:decision']);
    expect(seen[0]!.ev).toMatchObject({ binary: '/usr/bin/make', argv: ['build'] });
    expect(seen[0]!.ev.recipe).toContain('echo building > built.txt');
    expect(existsSync(join(k.session.staged.workdir.dir, 'built.txt'))).toBe(false);
    expect(events(k, 'call_denied')[0]).toMatchObject({ kind: 'shell', binary: '/usr/bin/make', argv: ['build'], hook: 'guard' });
    expect(events(k, 'shell')).toEqual([]);
    expect(bodies(k)[1]).toContain("Refused by policy hook 'guard': no builds on Sundays");
  });

  it('an allowed command runs, then the hook observes it with its exit code and output', async () => {
    const watch: HookDef = { name: 'watch', contract: 'binding: on-shell\n', script: { 'on-shell': { record: true } } };
    const k = await open([watch], { turns: [{ toolCalls: [{ name: 'make', input: { command: 'build' } }] }, { text: 'ok' }] }, SHELL_CAPS);
    writeFileSync(join(k.session.staged.workdir.dir, 'Makefile'), 'build:\n\t@echo building\n\t@false\n');
    const r = await k.session.runTask(TASK);
    expect(r.exit).toBe('completed');
    const seen = recs(k, 'watch');
    // Observation only (no deny policy): once, after the command, carrying what it did.
    expect(seen).toHaveLength(1);
    expect(seen[0]!.ev).toMatchObject({ binary: '/usr/bin/make', argv: ['build'] });
    expect(seen[0]!.ev.outcome).toMatchObject({ exitCode: 2, stdout: 'building\n' });
    expect(events(k, 'shell')[0]).toMatchObject({ exit_code: 2 });
  });

  it('a binary outside capabilities.shell.allow is refused by the manifest; the policy hook is never asked', async () => {
    const k = await open([guard], { turns: [{ toolCalls: [{ name: 'curl', input: { command: 'http://example.com' } }] }, { text: 'ok' }] }, SHELL_CAPS);
    await k.session.runTask(TASK);
    expect(recs(k, 'guard')).toEqual([]);
    expect(events(k, 'call_denied')).toEqual([]);
  });
});

describe('the lifecycle in a session', () => {
  it('an unbound async observer sees every session event once, in order, with one session id; drained at close', async () => {
    const k = await open([{ name: 'watch', contract: 'execution_mode: async\n', script: { '*': { record: true } } }], TOOL_THEN_DONE);
    await k.session.runTask(TASK);
    const sid = k.session.sessionId;
    await k.close();
    kit = undefined;
    const seen = recs(k, 'watch');
    expect(seen.map((x) => x.rec)).toEqual([
      'on-session-start',
      'on-task-start',
      'on-inference',
      'on-tool-call',
      'on-inference',
      'on-task-end',
      'on-session-end',
    ]);
    expect(seen[0]!.ev.sessionId).toBe(sid);
    expect(sid).toMatch(/^ses_[0-9a-f]{32}$/);
    expect(seen[3]!.ev.outcome).toBeDefined();
    expect(seen[1]!.ev).toMatchObject({ taskId: 't1', contextId: 'ctx-1', source: 'task_md', contextWindow: 0, budgetTokens: 0, priorTokens: 0 });
  });

  it('task_acceptance queue: on-task-start and on-task-end fire once per task, on-session-start and on-session-end once per launch', async () => {
    const k = await open(
      [{ name: 'watch', script: { '*': { record: true } } }],
      { turns: [{ text: 'first' }, { text: 'second' }] },
      'lifecycle:\n  task_acceptance: queue\n  queue_depth: 4',
    );
    await k.session.runTask({ ...TASK, taskId: 'q1', contextId: 'c1' });
    await k.session.runTask({ ...TASK, taskId: 'q2', contextId: 'c2' });
    await k.close();
    kit = undefined;
    const seen = recs(k, 'watch').map((x) => x.rec);
    expect(seen.filter((r) => r === 'on-session-start')).toHaveLength(1);
    expect(seen.filter((r) => r === 'on-session-end')).toHaveLength(1);
    expect(
      recs(k, 'watch')
        .filter((x) => x.rec === 'on-task-start')
        .map((x) => x.ev.taskId),
    ).toEqual(['q1', 'q2']);
    expect(seen.filter((r) => r === 'on-task-end')).toHaveLength(2);
  });

  it('on-inference artifacts stream to the task as artifacts', async () => {
    const k = await open(
      [{ name: 'notes', contract: 'binding: on-inference\n', script: { 'on-inference': { ret: { tag: 'artifact', val: '{"turn":"$n"}' } } } }],
      { turns: [{ text: 'hello' }] },
    );
    const got: unknown[] = [];
    await k.session.runTask(TASK, { ...SILENT_SINK, artifact: (a) => got.push(a) });
    expect(got).toEqual([expect.objectContaining({ data: { turn: '1' } })]);
  });

  it('seed-context: messages at the head of the first request, ids and source-id never sent; context_seed traced', async () => {
    const seed = [
      { role: 'user', content: 'Earlier you learned: the build uses make.', sourceId: 'memory:7', id: 'hook-own-id' },
      { role: 'assistant', content: 'Noted.' },
    ];
    const k = await open(
      [
        {
          name: 'memory',
          contract: 'binding: on-task-start\ncommit_policy: seed-context\n',
          script: { 'on-task-start': { ret: { tag: 'seed-context', val: seed } } },
        },
      ],
      { turns: [{ text: 'ok' }] },
      'context:\n  max_tokens: 2000\n  seed_budget: 0.1',
    );
    await k.session.runTask(TASK);
    const first = k.provider.requests[0]!.body as { messages: Array<{ role: string; content: unknown }> };
    expect(JSON.stringify(first.messages[0])).toContain('Earlier you learned: the build uses make.');
    expect(first.messages[1]!.role).toBe('assistant');
    expect(JSON.stringify(first.messages[2])).toContain('please echo hi');
    const bytes = bodies(k)[0]!;
    expect(bytes).not.toContain('memory:7');
    expect(bytes).not.toContain('hook-own-id');
    expect(bytes).not.toMatch(/msg_[0-9a-f]{8}-/);
    expect(events(k, 'context_seed')[0]).toMatchObject({ hook: 'memory', outcome: 'committed', budget_tokens: 200 });
  });

  it('reopen-task: the task re-runs with the feedback; the hook reads the task text through task-io', async () => {
    const k = await open(
      [
        {
          name: 'review',
          contract: 'binding: on-task-end\ncommit_policy: reopen-task\n',
          caps: { task_io: { read: true } },
          script: {
            'on-task-end': [
              { ret: { tag: 'reopen-task', val: 'say it louder' } },
              { ops: [{ op: 'read-input', form: 'as-given' }, { op: 'read-input', form: 'original' }, { op: 'read-output' }], record: true },
            ],
          },
        },
      ],
      { turns: [{ text: 'hi' }, { text: 'HI' }] },
    );
    const r = await k.session.runTask(TASK);
    expect(r).toMatchObject({ exit: 'completed', text: 'HI', reopens: 1 });
    expect(events(k, 'task_reopened')[0]).toMatchObject({ hook_name: 'review', reason: 'say it louder', reopen_number: 1 });
    expect(bodies(k)[1]).toContain('# Reopen feedback');
    expect(bodies(k)[1]).toContain('review: say it louder');
    // At the second on-task-end the hook read the task through murmur:task-io/read.
    const ops = recs(k, 'review').find((x) => x.rec === 'on-task-end:ops') as unknown as { ops: Array<{ ok?: string }> };
    expect(ops.ops[0]!.ok).toContain('please echo hi');
    expect(ops.ops[0]!.ok).toContain('# Reopen feedback');
    expect(ops.ops[1]).toEqual({ ok: 'please echo hi' });
    expect(ops.ops[2]).toEqual({ ok: 'HI' });
  });

  it('compaction: the hook summarizes through run-inference (the capsule driver), the history is replaced', async () => {
    const k = await open(
      [
        {
          name: 'squash',
          contract: 'binding: on-compaction\ncommit_policy: replace-context\n',
          script: { 'on-compaction': { compact: { sourceId: 'compaction:1' } } },
        },
      ],
      { turns: [{ text: 'a long answer' }, { text: 'SUMMARY OF EVERYTHING' }] },
      SMALL_WINDOW,
    );
    const r = await k.session.runTask(TASK);
    expect(r.exit, r.reason).toBe('completed');
    const ev = events(k);
    // The hook's completion went through the capsule's driver to the provider, with the manifest model.
    expect(ev.find((e) => e.event_type === 'inference' && e.origin === 'hook:squash')).toMatchObject({ model: 'claude-test' });
    expect(bodies(k)[1]).toContain('please echo hi');
    expect(ev.find((e) => e.event_type === 'compaction')).toMatchObject({ hook: 'squash', messages_after: 1 });
  });

  it('compaction: a hook error ends the session failed (the task fails, on-task-end still fires, no reopen, no further task, session_end failed)', async () => {
    const k = await open(
      [
        { name: 'squash', contract: 'binding: on-compaction\ncommit_policy: replace-context\n', script: { 'on-compaction': { err: 'no summary' } } },
        {
          name: 'review',
          contract: 'binding: on-task-end\ncommit_policy: reopen-task\n',
          script: { 'on-task-end': { record: true, ret: { tag: 'reopen-task', val: 'try again' } } },
        },
      ],
      { turns: [{ text: 'big answer' }] },
      SMALL_WINDOW,
    );
    const ended: unknown[] = [];
    k.session.onEnded((e) => ended.push(e));
    const r = await k.session.runTask(TASK);
    expect(r.exit).toBe('failed');
    expect(r.reason).toMatch(/compaction hook squash failed: compaction hook 'squash' returned err: no summary/);
    expect(r.sessionEnded).toEqual({ exitStatus: 'failed', reason: r.reason });
    expect(ended).toEqual([r.sessionEnded]);
    expect(events(k, 'hook_dispatch_error')[0]).toMatchObject({ hook_name: 'squash', event: 'on-compaction', arm: 'error' });
    // on-task-end fired once for the task; its reopen is refused: the session is over.
    expect(recs(k, 'review').map((x) => [x.rec, x.ev.exitStatus])).toEqual([['on-task-end', 'failed']]);
    expect(events(k, 'task_reopen_refused')).toMatchObject([{ hook_name: 'review', reason: 'session_ended' }]);
    expect(r.reopens).toBe(0);
    // No further task runs in this session.
    await expect(k.session.runTask({ ...TASK, taskId: 'after' })).rejects.toMatchObject({ code: 'E-RUN-021' });
    expect(events(k, 'task_start')).toHaveLength(1);
    // The session ends with the status the table gives, whatever its caller passes.
    await k.close('ok');
    kit = undefined;
    expect(events(k, 'session_end')[0]).toMatchObject({ exit_status: 'failed' });
  });

  it('compaction: an error after the spend ceiling refused the hook’s run-inference ends the session spend_ceiling_reached', async () => {
    const squash: HookDef = {
      name: 'squash',
      contract: 'binding: on-compaction\ncommit_policy: replace-context\n',
      script: { 'on-compaction': { compact: {} } },
    };
    const turns: Script = { turns: [{ text: 'a long answer' }, { text: 'SUMMARY' }] };
    // Measure the two calls' token counts without a ceiling, then set one the task's own turn fits
    // under and the hook's completion does not.
    const probe = await open([squash], turns, SMALL_WINDOW);
    await probe.session.runTask(TASK);
    const inf = events(probe, 'inference');
    const main = inf.find((e) => e.origin === undefined)!;
    const hook = inf.find((e) => e.origin === 'hook:squash')!;
    await probe.close();
    kit = undefined;
    const maxOut = 8192;
    const limit = (main.input_tokens as number) + maxOut + Math.floor(((main.output_tokens as number) + (hook.input_tokens as number)) / 2);
    const y = hookCapsuleYaml([squash], SMALL_WINDOW).replace('  model: claude-test', `  model: claude-test\n  max_session_tokens: ${limit}`);
    kit = await openKit({ yaml: y, artifacts: [driverDef('anthropic'), ECHO_TOOL, hookArtifact(squash)], script: turns });
    const r = await kit.session.runTask(TASK);
    expect(r.exit, r.reason).toBe('spend_ceiling_reached');
    expect(r.reason).toMatch(/compaction hook squash failed: .*after the spend ceiling refused its run-inference/);
    expect(events(kit, 'spend_ceiling_reached')[0]).toMatchObject({ origin: 'hook:squash' });
    expect(r.sessionEnded).toMatchObject({ exitStatus: 'spend_ceiling_reached' });
    const k2 = kit;
    await k2.close('ok');
    kit = undefined;
    expect(events(k2, 'session_end')[0]).toMatchObject({ exit_status: 'spend_ceiling_reached' });
  });

  it('reopen-task is bounded by lifecycle.max_task_reopens, then by the task’s remaining turns', async () => {
    const nag: HookDef = {
      name: 'nag',
      contract: 'binding: on-task-end\ncommit_policy: reopen-task\n',
      script: { 'on-task-end': { ret: { tag: 'reopen-task', val: 'again' } } },
    };
    // Two reopens allowed: three attempts, then refused; a completed task that still wants a reopen fails.
    const k = await open([nag], { turns: [{ text: 'one' }, { text: 'two' }, { text: 'three' }] }, 'lifecycle:\n  max_task_reopens: 2\n');
    const r = await k.session.runTask(TASK);
    expect(r).toMatchObject({ exit: 'failed', reopens: 2 });
    expect(r.reason).toBe('reopen budget exhausted (hook nag asked to reopen)');
    expect(events(k, 'task_reopened').map((e) => e.reopen_number)).toEqual([1, 2]);
    expect(events(k, 'task_reopen_refused')).toMatchObject([{ hook_name: 'nag', reason: 'max_task_reopens' }]);
    expect(k.provider.requests).toHaveLength(3);
    await k.close();
    // max_turns 2 and many reopens allowed: the turns run out first.
    const k2 = await open([nag], { turns: [{ text: 'one' }, { text: 'two' }] }, '  max_turns: 2\nlifecycle:\n  max_task_reopens: 9\n');
    const r2 = await k2.session.runTask(TASK);
    expect(r2).toMatchObject({ exit: 'failed', reopens: 1 });
    expect(events(k2, 'task_reopen_refused')).toMatchObject([{ hook_name: 'nag', reason: 'max_turns' }]);
    expect(k2.provider.requests).toHaveLength(2);
  });

  it('conversation/read serves the session’s record: every finished task’s messages, tool calls included, even at on-session-end', async () => {
    const reader: HookDef = {
      name: 'reader',
      contract: 'binding: on-session-end\n',
      caps: { conversation: { read: true } },
      script: { 'on-session-end': { ops: [{ op: 'read-messages', limit: 100 }], record: true } },
    };
    const k = await open([reader], { turns: [{ toolCalls: [{ name: 'echo', input: { text: 'hi' } }] }, { text: 'first done' }, { text: 'second done' }] });
    await k.session.runTask(TASK);
    await k.session.runTask({ ...TASK, taskId: 't2', text: 'and another' });
    await k.close();
    kit = undefined;
    const ops = recs(k, 'reader').find((x) => x.rec === 'on-session-end:ops') as unknown as {
      ops: Array<{ ok?: { messages: Array<{ role: string; content: string }>; total: number } }>;
    };
    const page = ops.ops[0]!.ok!;
    // Task 1: user, assistant (tool call), tool result, assistant; task 2: user, assistant. Newest first.
    expect(page.total).toBe(6);
    expect(page.messages.map((m) => m.role)).toEqual(['assistant', 'user', 'assistant', 'tool', 'assistant', 'user']);
    expect(page.messages[0]!.content).toBe('second done');
    expect(page.messages[5]!.content).toBe('please echo hi');
    // The tool call and its result keep their structure instead of reading as empty text.
    expect(page.messages[4]!.content).toContain('"name":"echo"');
    expect(page.messages[3]!.content).toContain('__murmur_tool_msg__');
  });

  it('on-task-start’s prior-tokens is the loaded history counted as the loop counts it (the next turn’s input grows by exactly that)', async () => {
    const watch: HookDef = { name: 'watch', contract: 'binding: on-task-start\n', script: { 'on-task-start': { record: true } } };
    const k = await open([watch], { turns: [{ text: 'the first answer' }, { text: 'the second answer' }] }, 'lifecycle:\n  conversation: threaded\n');
    await k.session.runTask(TASK);
    await k.session.runTask({ ...TASK, taskId: 't2' });
    const [first, second] = recs(k, 'watch').map((x) => Number(x.ev.priorTokens));
    const inf = events(k, 'inference').filter((e) => e.origin === undefined);
    expect(first).toBe(0);
    expect(second).toBeGreaterThan(0);
    // Same task text both times: the second request's full count exceeds the first by the history alone.
    expect(second).toBe(Number(inf[1]!.input_tokens) - Number(inf[0]!.input_tokens));
  });

  it('on-task-end fires once for every task, canceled and out-of-budget ones too; their reopen is refused', async () => {
    const review = {
      name: 'review',
      contract: 'binding: on-task-end\ncommit_policy: reopen-task\n',
      script: { 'on-task-end': { record: true, ret: { tag: 'reopen-task', val: 'again' } } },
    };
    const k = await open([review], { turns: [{ text: 'never reached' }] }, '  max_session_tokens: 10');
    const broke = await k.session.runTask({ ...TASK, taskId: 'over-budget' });
    expect(broke.exit).toBe('spend_ceiling_reached');
    const abort = new AbortController();
    abort.abort(new Error('user canceled'));
    const canceled = await k.session.runTask({ ...TASK, taskId: 'canceled' }, SILENT_SINK, abort.signal);
    expect(canceled.exit).toBe('canceled');
    expect(recs(k, 'review').map((x) => [x.ev.taskId, x.ev.exitStatus])).toEqual([
      ['over-budget', 'spend_ceiling_reached'],
      ['canceled', 'canceled'],
    ]);
    expect(events(k, 'task_reopen_refused').map((e) => [e.task_id, e.reason])).toEqual([
      ['over-budget', 'spend_ceiling_reached'],
      ['canceled', 'canceled'],
    ]);
    expect(events(k, 'task_reopened')).toEqual([]);
    expect(k.provider.requests).toHaveLength(0);
  });

  it('on-stage enrichment: the description a hook wrote for an allowlisted shell binary is what the model sees', async () => {
    const manifest = 'name: jq\ndescription: "Query and reshape JSON.\\nPass a jq filter and a file, e.g. .items[] data.json"\n';
    const k = await open(
      [
        {
          name: 'enrich',
          contract: 'binding: on-stage\ncommit_policy: write-manifests\n',
          script: { 'on-stage': { ret: { tag: 'write-manifests', val: [{ binaryName: 'jq', content: manifest }] } } },
        },
      ],
      { turns: [{ text: 'ok' }] },
      'capabilities:\n  shell:\n    allow: [jq, wc]\n',
    );
    await k.session.runTask(TASK);
    const tools = (k.provider.requests[0]!.body as { tools: { name: string; description: string }[] }).tools;
    expect(tools.find((t) => t.name === 'jq')!.description).toBe('Query and reshape JSON. Pass a jq filter and a file, e.g. .items[] data.json');
    // A binary no hook described keeps the generic line.
    expect(tools.find((t) => t.name === 'wc')!.description).toBe('Run `wc` with the given arguments in the session workdir.');
  });

  it('on-stage writes tool manifests into the workdir while staging', async () => {
    const k = await open(
      [
        {
          name: 'enrich',
          contract: 'binding: on-stage\ncommit_policy: write-manifests\n',
          script: { 'on-stage': { ret: { tag: 'write-manifests', val: [{ binaryName: 'jq', content: 'name: jq\n' }] } } },
        },
      ],
      { turns: [{ text: 'ok' }] },
    );
    expect(readFileSync(join(k.session.staged.workdir.dir, 'tools', 'jq', 'murmur.yaml'), 'utf8')).toBe('name: jq\n');
  });
});

describe('load failures surface at session open', () => {
  it('a hook missing a required export stops the session from opening, naming it', async () => {
    const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
    const src = tmp('art-half-');
    writeFileSync(join(src, 'murmur.yaml'), 'name: half\nversion: 1.0.0\nruntime: hook\ndescription: A broken hook.\n');
    writeFileSync(join(src, 'component.wasm'), readFileSync(await variantFixture('hook-missing-export')));
    publish(registry, src);
    const capsuleDir = tmp('capsule-');
    writeFileSync(
      join(capsuleDir, 'murmur.yaml'),
      hookCapsuleYaml([]).replace('artifacts:\n', 'artifacts:\n  - {name: half, version: 1.0.0, runtime: hook}\n'),
    );
    const provider = await startScriptedProvider({ turns: [] });
    try {
      const hostEnv = { PATH: process.env.PATH, MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY };
      const staged = await stage({ capsuleDir, registryDir: registry, workRoot: tmp('work-'), hostEnv });
      const e = await openSession(staged, { hostEnv }).catch((x: unknown) => x);
      expect(e).toMatchObject({ code: 'E-HOOK-002', message: "hook 'half': component is missing the required export 'on-inference'" });
    } finally {
      await provider.stop();
    }
  });
});
