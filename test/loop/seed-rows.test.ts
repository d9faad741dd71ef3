/**
 * The seed's tables for the agent loop, one test per row, end to end: real driver component (the
 * replay driver, which returns canned responses verbatim and records what it was sent), real tool
 * components, real files.
 */
import { mkdirSync, readFileSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TokenCounter } from '../../runtime/inference/tokens.ts';
import { readTrace } from '../../runtime/trace/read.ts';
import { ECHO_TOOL } from './kit.ts';
import { DATAPATH_TOOL, endTurn, openReplay, toolCall, type ReplayKit } from './replay-kit.ts';

let kit: ReplayKit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

const trace = (k: ReplayKit) => readTrace(k.session.staged.workdir.trace).events;
const sent = (k: ReplayKit, i: number) => k.recorder.bodies[i] as { messages: { role: string }[]; continuation_id?: string; prompt_cache_key: string };
const task = (contextId = 'ctx-A', text = 'do it') => ({ taskId: `t-${Math.random()}`, contextId, text, source: 'task_md' as const });

describe('stateful driver continuation (all five rows)', () => {
  it('driver returns a non-empty continuation_id → the runtime holds it and sends it on the next turn', async () => {
    kit = await openReplay({
      tools: [ECHO_TOOL],
      responses: [
        { ...toolCall('echo', { text: 'a' }), metadata: [['continuation_id', 'cont-1']] },
        { ...endTurn('done'), metadata: [['continuation_id', 'cont-2']] },
      ],
    });
    expect((await kit.session.runTask(task())).exit).toBe('completed');
    expect(sent(kit, 0).continuation_id).toBeUndefined();
    expect(sent(kit, 1).continuation_id).toBe('cont-1');
  });

  it('next turn, same context_id → only the messages appended since the acknowledgement, plus the held id', async () => {
    kit = await openReplay({
      tools: [ECHO_TOOL],
      responses: [{ ...toolCall('echo', { text: 'a' }), metadata: [['continuation_id', 'cont-1']] }, endTurn('done')],
    });
    await kit.session.runTask(task());
    expect(sent(kit, 0).messages.map((m) => m.role)).toEqual(['user']);
    // The driver was sent [user]: the delta is its own reply and the tool result answering it.
    expect(sent(kit, 1).messages.map((m) => m.role)).toEqual(['assistant', 'tool']);
  });

  it('next turn, different context_id → full resend; a continuation is never reused across tasks', async () => {
    kit = await openReplay({
      name: 'cont-threaded',
      tools: [ECHO_TOOL],
      yamlExtra: 'lifecycle:\n  conversation: threaded',
      responses: [{ ...endTurn('first'), metadata: [['continuation_id', 'cont-1']] }, endTurn('second')],
    });
    await kit.session.runTask(task('ctx-A', 'first task'));
    // The id is still held after the task (the session loop goes on)...
    expect(kit.session.continuationHeld).toBe('cont-1');
    await kit.session.runTask(task('ctx-B', 'second task'));
    // ...but the next task is another context: full resend, no id.
    expect(sent(kit, 1).continuation_id).toBeUndefined();
    expect(sent(kit, 1).messages.map((m) => m.role)).toEqual(['user']);
    expect(JSON.stringify(sent(kit, 1).messages)).toContain('second task');
  });

  it('the id is held for the rest of the session loop: a threaded follow-up task of the same context sends only its new message', async () => {
    kit = await openReplay({
      name: 'cont-follow-up',
      yamlExtra: 'lifecycle:\n  conversation: threaded',
      responses: [
        { ...endTurn('first answer'), metadata: [['continuation_id', 'cont-1']] },
        { ...endTurn('second answer'), metadata: [['continuation_id', 'cont-2']] },
        endTurn('third answer'),
      ],
    });
    await kit.session.runTask(task('ctx-A', 'first task'));
    await kit.session.runTask(task('ctx-A', 'follow-up'));
    expect(sent(kit, 1).continuation_id).toBe('cont-1');
    expect(sent(kit, 1).messages.map((m) => m.role)).toEqual(['assistant', 'user']);
    expect(JSON.stringify(sent(kit, 1).messages)).toContain('follow-up');
    expect(JSON.stringify(sent(kit, 1).messages)).not.toContain('first task');
    // A stateless capsule reusing the context id starts a fresh conversation: full resend.
    await kit.close();
    kit = await openReplay({
      name: 'cont-stateless',
      responses: [{ ...endTurn('first answer'), metadata: [['continuation_id', 'cont-1']] }, endTurn('second answer')],
    });
    await kit.session.runTask(task('ctx-A', 'first task'));
    await kit.session.runTask(task('ctx-A', 'unrelated'));
    expect(sent(kit, 1).continuation_id).toBeUndefined();
    expect(sent(kit, 1).messages.map((m) => m.role)).toEqual(['user']);
  });

  it('driver omits the key or returns an empty string → the held id is dropped and the next turn resends in full', async () => {
    kit = await openReplay({
      tools: [ECHO_TOOL],
      responses: [
        { ...toolCall('echo', { text: 'a' }, 'c1'), metadata: [['continuation_id', 'cont-1']] },
        { ...toolCall('echo', { text: 'b' }, 'c2'), metadata: [['continuation_id', '']] },
        { ...toolCall('echo', { text: 'c' }, 'c3'), metadata: [['continuation_id', 'cont-3']] },
        toolCall('echo', { text: 'd' }, 'c4'),
        endTurn('done'),
      ],
    });
    await kit.session.runTask(task());
    expect(sent(kit, 1).continuation_id).toBe('cont-1');
    expect(sent(kit, 2).continuation_id).toBeUndefined(); // empty string dropped it
    expect(sent(kit, 2).messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool']);
    expect(sent(kit, 3).continuation_id).toBe('cont-3');
    expect(sent(kit, 4).continuation_id).toBeUndefined(); // omitted dropped it
    expect(sent(kit, 4).messages).toHaveLength(9);
  });
});

describe('stateful driver continuation: replace-context', () => {
  it('a hook commits replace-context → the held id is dropped and the next turn resends the post-compaction history', async () => {
    kit = await openReplay({
      tools: [ECHO_TOOL],
      hooks: [{ name: 'compactor', contract: 'binding: on-compaction\ncommit_policy: replace-context\n', script: { 'on-compaction': { compact: {} } } }],
      yamlExtra: 'context:\n  max_tokens: 60',
      responses: [
        { ...toolCall('echo', { text: 'a' }, 'k1'), metadata: [['continuation_id', 'cont-1']] },
        endTurn('the summary'), // the compaction hook's own run-inference
        endTurn('done'),
      ],
    });
    const r = await kit.session.runTask(task());
    expect(r.exit).toBe('completed');
    expect(trace(kit).some((e) => e.event_type === 'compaction')).toBe(true);
    // Call 2 is the hook's completion; call 3 is the next turn: no held id, the whole new history.
    expect(sent(kit, 2).continuation_id).toBeUndefined();
    const roles = sent(kit, 2).messages.map((m) => m.role);
    expect(roles).toEqual(['user', 'assistant', 'tool']);
    expect(JSON.stringify(sent(kit, 2).messages[0])).toContain('summary: the summary');
  });
});

describe('compaction event fields', () => {
  it('model and system-prompt carry inference.compaction.model and the system_prompt_file contents verbatim', async () => {
    kit = await openReplay({
      tools: [ECHO_TOOL],
      hooks: [{ name: 'watcher', contract: 'binding: on-compaction\n', script: { 'on-compaction': { record: true } } }],
      files: { 'compact.md': 'Summarize tersely.\nKeep file names.' },
      yamlExtra: 'context:\n  max_tokens: 60',
      inferenceExtra: '  compaction:\n    model: small-model\n    system_prompt_file: compact.md',
      responses: [toolCall('echo', { text: 'a' }), endTurn('done')],
    });
    await kit.session.runTask(task());
    const log = readFileSync(join(kit.session.staged.workdir.dir, 'logs', 'hook-watcher.log'), 'utf8');
    const rec = log
      .split('\n')
      .filter((l) => l.startsWith('{"rec"'))
      .map((l) => JSON.parse(l) as { ev: Record<string, unknown> })[0]!;
    expect(rec.ev.model).toBe('small-model');
    expect(rec.ev.systemPrompt).toBe('Summarize tersely.\nKeep file names.');
  });
});

describe('compaction threshold', () => {
  const recorded = (k: ReplayKit) => {
    const f = join(k.session.staged.workdir.dir, 'logs', 'hook-watcher.log');
    return existsSync(f)
      ? readFileSync(f, 'utf8')
          .split('\n')
          .filter((l) => l.startsWith('{"rec"')).length
      : 0;
  };
  const open = (window: number) =>
    openReplay({
      name: 'threshold',
      hooks: [{ name: 'watcher', contract: 'binding: on-compaction\n', script: { 'on-compaction': { record: true } } }],
      yamlExtra: `context:\n  max_tokens: ${window}`,
      inferenceExtra: '  compaction:\n    threshold: 0.5',
      responses: [endTurn('a short answer')],
    });

  it('on-compaction fires when the turn’s occupancy reaches the threshold, not below it', async () => {
    // Measure the turn: the host's count of the full conversation plus the answer.
    kit = await open(100_000);
    await kit.session.runTask(task());
    const inf = trace(kit).find((e) => e.event_type === 'inference')!;
    const used = Number(inf.input_tokens) + Number(inf.output_tokens);
    expect(recorded(kit)).toBe(0);
    await kit.close();
    // Exactly at the threshold (used / window = 0.5): dispatched once.
    kit = await open(used * 2);
    await kit.session.runTask(task());
    expect(recorded(kit)).toBe(1);
    await kit.close();
    // One token of room more than the threshold allows: not dispatched.
    kit = await open(used * 2 + 2);
    await kit.session.runTask(task());
    expect(recorded(kit)).toBe(0);
  });

  it('counts the full conversation while a continuation is held, not the smaller payload sent', async () => {
    kit = await openReplay({
      tools: [ECHO_TOOL],
      responses: [{ ...toolCall('echo', { text: 'a' }), metadata: [['continuation_id', 'cont-1']] }, endTurn('done')],
    });
    await kit.session.runTask(task());
    const [first, second] = trace(kit).filter((e) => e.event_type === 'inference');
    // Turn 2 sent only the delta (the driver's own reply and the tool result)...
    expect(sent(kit, 1).continuation_id).toBe('cont-1');
    expect(sent(kit, 1).messages.map((m) => m.role)).toEqual(['assistant', 'tool']);
    // ...but its input count covers the whole conversation: more than turn 1's whole request.
    expect(Number(second!.input_tokens)).toBeGreaterThan(Number(first!.input_tokens) + Number(first!.output_tokens) - 1);
  });
});

describe('prompt cache routing hint', () => {
  it('has a context id and fits → <name>:<version>:<context-id>, the same on every turn of the task', async () => {
    kit = await openReplay({ tools: [ECHO_TOOL], responses: [toolCall('echo', { text: 'a' }), endTurn('done')] });
    await kit.session.runTask(task('ctx-9'));
    expect(sent(kit, 0).prompt_cache_key).toBe('replay-capsule:1.0.0:ctx-9');
    expect(sent(kit, 1).prompt_cache_key).toBe('replay-capsule:1.0.0:ctx-9');
  });

  it('has no context id → <name>:<version> (a hook’s run-inference belongs to no task context)', async () => {
    kit = await openReplay({
      hooks: [
        {
          name: 'asker',
          contract: 'binding: on-task-end\n',
          script: { 'on-task-end': { ops: [{ op: 'infer', messages: [{ role: 'user', content: 'grade it' }] }] } },
        },
      ],
      responses: [endTurn('answer'), endTurn('graded')],
    });
    await kit.session.runTask(task('ctx-x'));
    expect(sent(kit, 0).prompt_cache_key).toBe('replay-capsule:1.0.0:ctx-x');
    expect(sent(kit, 1).prompt_cache_key).toBe('replay-capsule:1.0.0');
  });

  it('would run past 64 characters → the leading characters, then ":" and a 16-hex suffix, still opening with the capsule name', async () => {
    kit = await openReplay({
      name: 'a-capsule-with-a-rather-long-descriptive-name',
      tools: [ECHO_TOOL],
      responses: [toolCall('echo', { text: 'a' }), endTurn('done')],
    });
    const ctx = '0b8e7c1e-8d1f-4b1a-9a57-6f6b2a0f5e11';
    await kit.session.runTask(task(ctx));
    const key = sent(kit, 0).prompt_cache_key;
    expect(key).toHaveLength(64);
    expect(key.startsWith('a-capsule-with-a-rather-long-descriptive-name')).toBe(true);
    expect(key).toMatch(/^.{47}:[0-9a-f]{16}$/);
    expect(sent(kit, 1).prompt_cache_key).toBe(key);
  });
});

describe('reported token usage (degrade rows)', () => {
  const usageOf = (k: ReplayKit) =>
    trace(k)
      .filter((e) => e.event_type === 'inference')
      .map((e) => e.reported_usage);

  it('no usage → nothing recorded (absent, never 0)', async () => {
    kit = await openReplay({ responses: [endTurn('x')] });
    await kit.session.runTask(task());
    expect(usageOf(kit)).toEqual([undefined]);
  });

  it('a usage that is not an object → nothing', async () => {
    kit = await openReplay({ responses: [endTurn('x', { usage: 'lots' })] });
    await kit.session.runTask(task());
    expect(usageOf(kit)).toEqual([undefined]);
  });

  it('a member that is not a non-negative integer → nothing for that member, well-formed siblings kept', async () => {
    kit = await openReplay({ responses: [endTurn('x', { usage: { input_tokens: 10, output_tokens: -1, cached_tokens: 2.5, cache_write_tokens: 0 } })] });
    await kit.session.runTask(task());
    expect(usageOf(kit)).toEqual([{ input_tokens: 10, cache_write_tokens: 0 }]);
  });

  it('a member the runtime does not define → nothing for that member', async () => {
    kit = await openReplay({ responses: [endTurn('x', { usage: { input_tokens: 7, reasoning_tokens: 99 } })] });
    await kit.session.runTask(task());
    expect(usageOf(kit)).toEqual([{ input_tokens: 7 }]);
  });

  it('the four members are recorded as reported, and budgets still use the host count', async () => {
    kit = await openReplay({ responses: [endTurn('x', { usage: { input_tokens: 12043, output_tokens: 218, cached_tokens: 11780, cache_write_tokens: 0 } })] });
    await kit.session.runTask(task());
    const inf = trace(kit).find((e) => e.event_type === 'inference')!;
    expect(inf.reported_usage).toEqual({ input_tokens: 12043, output_tokens: 218, cached_tokens: 11780, cache_write_tokens: 0 });
    expect(inf.input_tokens).not.toBe(12043);
  });
});

describe('spend ceiling', () => {
  it('a call over inference.max_session_tokens is refused before dispatch, never reaches the provider, and the task ends spend_ceiling_reached', async () => {
    kit = await openReplay({ responses: [endTurn('never')], inferenceExtra: '  max_session_tokens: 50\n  max_tokens: 100' });
    const r = await kit.session.runTask(task());
    expect(r.exit).toBe('spend_ceiling_reached');
    expect(kit.recorder.bodies).toHaveLength(0);
    expect(trace(kit).map((e) => e.event_type)).toContain('spend_ceiling_reached');
  });
});

describe('token accounting stays linear', () => {
  // How long counting takes is bench/'s to measure; here, that the loop counts all of it.
  it("1 MiB of text with no break points is counted in full: the turn's input tokens hold the whole text's count", async () => {
    kit = await openReplay({ responses: [endTurn('ok')] });
    const text = 'a'.repeat(1024 * 1024);
    const r = await kit.session.runTask(task('ctx', text));
    expect(r.exit).toBe('completed');
    const inf = trace(kit).find((e) => e.event_type === 'inference')!;
    const counter = new TokenCounter();
    const whole = await counter.count(text);
    await counter.close();
    expect(whole).toBeGreaterThan((1024 * 1024) / 64);
    expect(Number(inf.input_tokens)).toBeGreaterThanOrEqual(whole);
  });
});

describe('data-path (all six rows, and data wins)', () => {
  async function callTool(input: Record<string, unknown>, prepare?: (workdir: string) => void, yamlExtra?: string) {
    kit = await openReplay({ tools: [DATAPATH_TOOL], responses: [toolCall('datapath', input, 'dp1'), endTurn('done')], ...(yamlExtra ? { yamlExtra } : {}) });
    prepare?.(kit.session.staged.workdir.dir);
    await kit.session.runTask(task());
    const toolMsg = (sent(kit, 1).messages as unknown as { role: string; content: { text: string }[]; is_error?: boolean }[]).find((m) => m.role === 'tool')!;
    return { text: toolMsg.content[0]!.text, isError: toolMsg.is_error === true };
  }

  it('a regular file under the session workdir → its contents become the result', async () => {
    const r = await callTool({ write: { path: 'out/result.json', text: '{"rows":42}' }, dataPath: 'out/result.json' });
    expect(r).toEqual({ text: '{"rows":42}', isError: false });
  });

  it('the workdir is the tool’s own `.`: with a narrowed filesystem.scope the file is read beneath that scope, and nothing outside it (trace.jsonl) is reachable', async () => {
    const scoped = 'capabilities:\n  filesystem:\n    scope: work';
    const r = await callTool({ write: { path: 'result.json', text: '{"rows":7}' }, dataPath: 'result.json' }, undefined, scoped);
    expect(r).toEqual({ text: '{"rows":7}', isError: false });
    expect(existsSync(join(kit!.session.staged.workdir.dir, 'work', 'result.json'))).toBe(true);
    await kit!.close();
    const leak = await callTool({ dataPath: 'trace.jsonl' }, undefined, scoped);
    expect(leak.isError).toBe(true);
    expect(leak.text).toMatch(/data-path "trace.jsonl" .*(not exist|no such)/i);
    expect(leak.text).not.toContain('session_start');
  });

  it('an absolute path → the call fails', async () => {
    const r = await callTool({ dataPath: '/etc/passwd' });
    expect(r.isError).toBe(true);
    expect(r.text).not.toContain('root:');
  });

  it('a path climbing out with .. → the call fails', async () => {
    const r = await callTool({ dataPath: '../../../etc/passwd' });
    expect(r.isError).toBe(true);
    expect(r.text).not.toContain('root:');
  });

  it('a path passing through a symlink, wherever it points → the call fails', async () => {
    const r = await callTool({ dataPath: 'linked/inside.txt' }, (wd) => {
      mkdirSync(join(wd, 'real'));
      writeFileSync(join(wd, 'real', 'inside.txt'), 'inside the workdir');
      symlinkSync(join(wd, 'real'), join(wd, 'linked'));
    });
    expect(r.isError).toBe(true);
    expect(r.text).not.toContain('inside the workdir');
  });

  it('a file that does not exist → the call fails', async () => {
    const r = await callTool({ dataPath: 'out/missing.txt' });
    expect(r.isError).toBe(true);
  });

  it('a file over 10 MiB → the call fails', async () => {
    // 64 KiB written 176 times (11 MiB): the replay driver's script lives in murmur.yaml, which is
    // bounded at 1 MiB, so the tool input stays small and the tool makes the big file.
    const r = await callTool({ write: { path: 'out/big.txt', text: 'x'.repeat(64 * 1024), repeat: 176 }, dataPath: 'out/big.txt' });
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(/10 MiB|too large|exceeds/i);
  });

  it('% escapes are decoded before resolving: %2e%2e fails like ..', async () => {
    const r = await callTool({ dataPath: '%2e%2e/%2e%2e/etc/passwd' });
    expect(r.isError).toBe(true);
  });

  it('a result carrying data uses it verbatim and never opens data-path', async () => {
    const r = await callTool({ data: 'verbatim', dataPath: '/etc/passwd' });
    expect(r).toEqual({ text: 'verbatim', isError: false });
  });
});

describe('shell tool through the loop', () => {
  it('a binary not in capabilities.shell.allow is refused before anything is spawned', async () => {
    kit = await openReplay({ shell: ['echo'], responses: [toolCall('touch', { command: 'created-by-model' }), endTurn('done')] });
    await kit.session.runTask(task());
    expect(existsSync(join(kit.session.staged.workdir.dir, 'created-by-model'))).toBe(false);
    expect(JSON.stringify(sent(kit, 1).messages)).toContain("there is no tool named 'touch'");
  });

  it('non-zero exit is data; output over 16 KiB is cut with the full output under the workdir; argv and script recorded', async () => {
    const script = 'head -c 20000 /dev/zero | tr "\\0" x; exit 3';
    kit = await openReplay({ shell: ['sh'], responses: [toolCall('sh', { command: script }), endTurn('done')] });
    await kit.session.runTask(task());
    const ev = trace(kit).find((e) => e.event_type === 'shell')!;
    expect(ev).toMatchObject({ exit_code: 3, stdout_bytes: 20000, truncated: true, script });
    expect(ev.argv).toEqual(['-c', script]);
    expect(existsSync(join(kit.session.staged.workdir.dir, String(ev.full_output_path)))).toBe(true);
    const toolMsg = JSON.stringify(sent(kit, 1).messages);
    expect(toolMsg).toContain('Exit code: 3');
    expect(toolMsg).not.toContain('"is_error":true');
  });
});
