/**
 * The steps of a task on a capsule's A2A stream (`step` artifacts: the session's trace records),
 * `mur send` printing them with the lines `mur run` prints for the same capsule, response chunks
 * printed as they arrive, and file parts reaching the model. Real `mur serve` and `mur run`, real
 * WASM components and a real policy hook, the scripted provider.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { API_KEY, tmp } from '../loop/kit.ts';
import { startScriptedProvider } from '../provider/scripted-provider.ts';
import { capsule, cleanup, closeAll, mur } from './kit.ts';
import { SCRIPT, servedSteps, stepsCapsule } from './steps-capsule.ts';

afterAll(closeAll);

/** The step lines of a run's output (indented steps and the totals), durations made equal. */
function stepLines(lines: string[]): string[] {
  return lines
    .flatMap((l) => l.split('\n'))
    .filter((l) => /^ {2}\S|^ {4}\S|^■ task ok after/.test(l))
    .map((l) => l.replace(/\d+ ms/g, 'N ms'));
}

describe('the task’s steps on the A2A stream', () => {
  it('carries a turn with its model and tokens, a shell call with command and exit code, and a hook denial with its reason', async () => {
    const url = await servedSteps();
    const r = await mur(['send', url, 'do the steps', '--json']);
    expect(r.code).toBe(0);
    const records = (JSON.parse(r.out).steps as { kind: string; record?: Record<string, unknown> }[]).filter((s) => s.kind === 'step').map((s) => s.record!);
    expect(records[0]).toMatchObject({ event_type: 'task_start', source: 'a2a' });
    expect(records).toContainEqual(
      expect.objectContaining({
        event_type: 'inference',
        turn: 1,
        model: 'claude-test',
        decision: 'tool_call',
        tool_name: 'echo',
        input_tokens: expect.any(Number),
        output_tokens: expect.any(Number),
        duration_ms: expect.any(Number),
      }),
    );
    expect(records).toContainEqual(
      expect.objectContaining({ event_type: 'call_denied', tool_name: 'echo', hook: 'guard', reason: 'echo is not allowed today' }),
    );
    expect(records).toContainEqual(
      expect.objectContaining({ event_type: 'shell', binary: '/usr/bin/printf', command: 'hello-from-shell', argv: ['hello-from-shell'], exit_code: 0 }),
    );
    expect(records.at(-1)).toMatchObject({ event_type: 'task_end', exit_status: 'ok', turns: 3, input_tokens: expect.any(Number) });
  });

  it('carries each hook call with its decision: the allowing policy hook’s clean none, the denying one’s deny', async () => {
    const url = await servedSteps();
    const r = await mur(['send', url, 'do the steps', '--json']);
    expect(r.code).toBe(0);
    const records = (JSON.parse(r.out).steps as { kind: string; record?: Record<string, unknown> }[]).filter((s) => s.kind === 'step').map((s) => s.record!);
    const hookCalls = records.filter((x) => x.event_type === 'hook_call');
    // audit is called at the shell call's decision point and again after it; both return none.
    expect(hookCalls.filter((x) => x.hook_name === 'audit')).toEqual([
      expect.objectContaining({ event: 'on-shell', mode: 'blocking', outcome: 'none', duration_ms: expect.any(Number) }),
      expect.objectContaining({ event: 'on-shell', mode: 'blocking', outcome: 'none', duration_ms: expect.any(Number) }),
    ]);
    expect(hookCalls).toContainEqual(expect.objectContaining({ hook_name: 'guard', event: 'on-tool-call', outcome: 'deny' }));
    // The allowing decision comes before the shell call it let through.
    expect(records.findIndex((x) => x.hook_name === 'audit')).toBeLessThan(records.findIndex((x) => x.event_type === 'shell'));
  });

  it('a step is redacted and bounded: a shell command quoting the API key and 20,000 characters long', async () => {
    const command = `${API_KEY} ${'y'.repeat(20_000)}`;
    const url = await servedSteps({ turns: [{ toolCalls: [{ name: 'printf', input: { command } }] }, { text: 'printed' }] });
    const r = await mur(['send', url, 'print a lot', '--json']);
    expect(r.code).toBe(0);
    const shell = (JSON.parse(r.out).steps as { kind: string; record?: Record<string, unknown> }[]).find((s) => s.record?.event_type === 'shell')!.record!;
    expect(shell.exit_code).toBe(0);
    expect(r.out).not.toContain(API_KEY);
    expect(String(shell.command)).toMatch(/^\[redacted\] y/);
    // The trace keeps the whole argv; the step names its size instead.
    expect(shell.argv).toMatch(/^\[array of \d+ bytes of JSON, not streamed\]$/);
    expect(JSON.stringify(shell).length).toBeLessThan(8 * 1024);
  });

  it('mur send prints the steps in the lines mur run prints for the same capsule', async () => {
    const url = await servedSteps();
    const sent = await mur(['send', url, 'do the steps']);
    expect(sent.err).toBe('');
    expect(sent.code).toBe(0);

    const { dir, registry } = await stepsCapsule();
    const provider = await startScriptedProvider(SCRIPT);
    cleanup.push(() => provider.stop());
    const ran = await mur(['run', dir, '--task', 'do the steps', '--registry', registry, '--work-root', tmp('client-steps-run-')], {
      env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
    });
    expect(ran.code, ran.err).toBe(0);

    const local = stepLines(ran.lines);
    expect(local).toContain('    ⛔ echo denied by guard: echo is not allowed today');
    expect(local.some((l) => l.startsWith('    $ hello-from-shell → exit 0'))).toBe(true);
    expect(local.some((l) => l.startsWith('  turn 3: claude-test → end_turn'))).toBe(true);
    expect(stepLines(sent.lines)).toEqual(local);
    // Nothing twice: no bare "turn N" status line, no tool-call artifact line next to the step's.
    expect(sent.lines).not.toContain('  turn 1');
    // The answer streamed in as the last turn ran (before that turn's line), and only then.
    expect(sent.lines.filter((l) => l === 'all done')).toHaveLength(1);
    expect(sent.lines.indexOf('all done')).toBeLessThan(sent.lines.findIndex((l) => l.startsWith('  turn 3:')));
    expect(sent.lines.at(-1)).toBe('■ task completed');
  });
});

describe('mur send and a network denial', () => {
  it('prints a tool’s refused outgoing request as mur run does', async () => {
    const { served } = await capsule('netdenied', {
      turns: [{ toolCalls: [{ name: 'probe', input: { op: 'fetch', url: 'http://127.0.0.1:9/secret' } }] }, { text: 'done' }],
    });
    const r = await mur(['send', served.url, 'try the network']);
    expect(r.code).toBe(0);
    expect(r.lines).toContain('    ⛔ tool probe: outgoing request to http://127.0.0.1:9 refused (not in its network grant)');
  });
});

describe('mur send and the answer', () => {
  it('prints response chunks as they arrive and the answer once, not again at the end', async () => {
    const { served } = await capsule('chunks', {
      turns: [{ text: 'Let me look.', toolCalls: [{ name: 'echo', input: { text: 'x' } }] }, { text: 'first line\nsecond line' }],
    });
    const r = await mur(['send', served.url, 'stream it']);
    expect(r.code, r.out).toBe(0);
    const lines = r.out.split('\n');
    const done = lines.indexOf('■ task completed');
    // The answer's lines were printed as its chunks came, before the task ended, and not again
    // after it; the first turn's text (before its tool call) is printed before that call's line.
    expect(lines.filter((l) => l === 'first line')).toHaveLength(1);
    expect(lines.filter((l) => l === 'second line')).toHaveLength(1);
    expect(lines.indexOf('second line')).toBeLessThan(done);
    expect(lines.indexOf('Let me look.')).toBeLessThan(lines.findIndex((l) => /^ {4}echo ✓/.test(l)));
    expect(lines.slice(done + 1)).toEqual([]);
  });
});

describe('file parts', () => {
  it('a text file’s content reaches the model with its name; another file as a note naming its type and size', async () => {
    const { served, provider } = await capsule('fileparts', { turns: [{ text: 'read it' }] });
    const dir = tmp('send-fileparts-');
    writeFileSync(join(dir, 'notes.md'), '# notes\nthe secret word is pelican\n');
    writeFileSync(join(dir, 'pic.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    const r = await mur(['send', served.url, 'see attached', '--file', join(dir, 'notes.md'), '--file', join(dir, 'pic.png')]);
    expect(r.code).toBe(0);
    const body = provider.requests[0]!.body as { messages: { role: string; content: unknown }[] };
    const user = JSON.stringify(body.messages.find((m) => m.role === 'user')!.content);
    expect(user).toContain('see attached');
    expect(user).toContain('[attached file notes.md (text/markdown, 35 bytes)]\\n# notes\\nthe secret word is pelican');
    expect(user).toContain('[attached file pic.png (image/png, 4 bytes): not shown, the model is given text files only]');
  });

  it('a text file over 64 KiB reaches the model cut, with a note of how much was left out', async () => {
    const { served, provider } = await capsule('bigfile', { turns: [{ text: 'read it' }] });
    const dir = tmp('send-bigfile-');
    writeFileSync(join(dir, 'big.txt'), `${'a'.repeat(65_536)}TAIL-NOT-SENT${'b'.repeat(30_000)}`);
    const r = await mur(['send', served.url, 'see attached', '--file', join(dir, 'big.txt')]);
    expect(r.code).toBe(0);
    const user = JSON.stringify(
      (provider.requests[0]!.body as { messages: { role: string; content: unknown }[] }).messages.find((m) => m.role === 'user')!.content,
    );
    expect(user).toContain('[attached file big.txt (text/plain, 95549 bytes)]');
    expect(user).not.toContain('TAIL-NOT-SENT');
    expect(user).toContain('[… 30013 more characters of big.txt not shown]');
  });
});
