/**
 * `mur send` against real `mur serve` processes (the agent loop, real WASM components, the
 * scripted provider): streamed steps, the answer, exit status from the task's final state,
 * --json, files as parts, and answering an input-required task.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tmp } from '../loop/kit.ts';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';
import { capsule, closeAll, mur } from './kit.ts';

afterAll(closeAll);

describe('mur send', () => {
  it('streams the task’s turns and tool calls, prints the answer, exits 0 when it completed', async () => {
    const { served } = await capsule('sender', { turns: [{ toolCalls: [{ name: 'echo', input: { text: 'q' } }] }, { text: 'the answer' }] });
    const r = await mur(['send', served.url, 'hello', 'there']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.lines[0]).toMatch(new RegExp(`^▶ task [0-9a-f-]{36} \\(a2a, ${served.url.replace(/[/.]/g, '\\$&')}\\)$`));
    expect(r.lines.some((l) => /^ {2}turn 1: claude-test → tool echo {2}\(\d+ in \/ \d+ out, \d+ ms\)$/.test(l))).toBe(true);
    expect(r.lines.some((l) => /^ {4}echo ✓ \d+ ms$/.test(l))).toBe(true);
    expect(r.lines.some((l) => /^ {2}turn 2: claude-test → end_turn/.test(l))).toBe(true);
    // The answer streams in as the last turn runs; the task's totals and final state follow.
    expect(r.lines.filter((l) => l === 'the answer')).toHaveLength(1);
    expect(r.lines.at(-2)).toMatch(/^■ task ok after 2 turn\(s\), \d+ in \/ \d+ out tokens, \d+ ms$/);
    expect(r.lines.at(-1)).toBe('■ task completed');
  });

  it('exits 1 and says why when the task failed', async () => {
    const { served } = await capsule('failing', { turns: [{ error: { status: 400, type: 'invalid_request_error', message: 'scripted refusal' } }] });
    const r = await mur(['send', served.url, 'fail please']);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/■ task failed: .*scripted refusal/);
    expect(r.err).toMatch(/^task failed: .*scripted refusal/);
  });

  it('--json prints one document with the task, its state, answer, transport and steps', async () => {
    const { served } = await capsule('json', { turns: [{ toolCalls: [{ name: 'echo', input: { text: 'x' } }] }, { text: 'json answer' }] });
    const r = await mur(['send', served.url, 'as json', '--json']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.out);
    expect(doc).toMatchObject({ state: 'completed', answer: 'json answer', transport: 'JSONRPC' });
    expect(doc.taskId).toMatch(/^[0-9a-f-]{36}$/);
    expect(doc.steps).toContainEqual(expect.objectContaining({ kind: 'tool', tool: 'echo', status: 'ok' }));
    expect(doc.steps).toContainEqual({ kind: 'turn', turn: 1 });
    expect(doc.steps.at(-1)).toMatchObject({ kind: 'status', state: 'completed', final: true });
  });

  it('sends each --file as a file part with its bytes, name and media type', async () => {
    const { served } = await capsule('files', { turns: [{ text: 'read them' }] });
    const dir = tmp('send-files-');
    writeFileSync(join(dir, 'notes.md'), '# notes\nline two\n');
    writeFileSync(join(dir, 'data.json'), '{"a":1}');
    const r = await mur(['send', served.url, 'see attached', '--file', join(dir, 'notes.md'), `--file=${join(dir, 'data.json')}`, '--json']);
    expect(r.code).toBe(0);
    const { taskId } = JSON.parse(r.out);
    // What the capsule stored of the message, read back over the wire (A2A 1.0 GetTask).
    const got = await fetch(served.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: taskId, historyLength: 10 } }),
    }).then((x) => x.json());
    const parts = got.result.history.find((m: { role: string }) => m.role === 'ROLE_USER').parts;
    expect(parts).toEqual([
      { text: 'see attached' },
      expect.objectContaining({ raw: Buffer.from('# notes\nline two\n').toString('base64'), filename: 'notes.md', mediaType: 'text/markdown' }),
      expect.objectContaining({ raw: Buffer.from('{"a":1}').toString('base64'), filename: 'data.json', mediaType: 'application/json' }),
    ]);
  });

  it('a --file it cannot read fails before anything is sent (E-CLI-040)', async () => {
    const r = await mur(['send', 'http://127.0.0.1:9/', 'x', '--file', '/nonexistent/notes.md']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/--file \/nonexistent\/notes\.md: cannot read it \(ENOENT\) \[E-CLI-040\]/);
  });

  it('exits 3 when the capsule asks for input, says how to answer, and --task-id answers it', async () => {
    const { served } = await capsule('asker', {
      turns: [{ toolCalls: [{ name: 'probe', input: { op: 'ask', prompt: 'Which colour?' } }] }, { text: 'painted blue' }],
    });
    const first = await mur(['send', served.url, 'paint it']);
    expect(first.code).toBe(3);
    expect(first.out).toContain('? Which colour?');
    const m = /needs input: Which colour\?\n {2}answer: mur send \S+ --task-id (\S+) --context-id (\S+) /.exec(first.err);
    expect(m, first.err).not.toBeNull();
    const reply = await mur(['send', served.url, '--task-id', m![1]!, '--context-id', m![2]!, 'blue']);
    expect(reply.code).toBe(0);
    expect(reply.lines[0]).toContain(`▶ task ${m![1]}`);
    expect(reply.lines).toContain('painted blue');
  });

  it('exits 4 when the task is canceled while it runs (mur tasks cancel from another command)', async () => {
    let arrived!: () => void;
    let release!: () => void;
    const inFlight = new Promise<void>((r) => (arrived = r));
    const released = new Promise<void>((r) => (release = r));
    const { served } = await capsule('cancel', { turns: [{ text: 'too late', hold: () => (arrived(), released) }] });
    let started!: (id: string) => void;
    const taskId = new Promise<string>((r) => (started = r));
    const sending = mur(['send', served.url, 'take your time'], { onLine: (l) => /^▶ task (\S+)/.test(l) && started(/^▶ task (\S+)/.exec(l)![1]!) });
    const id = await taskId;
    await inFlight;
    const c = await mur(['tasks', served.url, 'cancel', id]);
    expect(c.code).toBe(0);
    expect(c.out).toMatch(new RegExp(`^${id} {2}canceled`));
    const r = await sending;
    release();
    expect(r.code).toBe(4);
    expect(r.out).toContain('■ task canceled');
    expect(r.err).toMatch(/^task canceled/);
  });

  it('Ctrl-C (SIGINT) cancels the task on the capsule and exits 4', async () => {
    let arrived!: () => void;
    let release!: () => void;
    const inFlight = new Promise<void>((r) => (arrived = r));
    const released = new Promise<void>((r) => (release = r));
    const { served } = await capsule('interrupted', { turns: [{ text: 'too late', hold: () => (arrived(), released) }] });
    const proc = spawn(process.execPath, [join(PROJECT_ROOT, 'bin/mur'), 'send', served.url, 'take your time'], {
      env: { PATH: process.env.PATH },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const closed = new Promise<number | null>((r) => proc.once('close', r));
    await inFlight;
    // The task is named on the stream before the first turn is admitted: the line is there or coming.
    await new Promise<void>((r) => {
      const seen = () => /▶ task \S+/.test(out) && (proc.stdout.off('data', seen), r());
      proc.stdout.on('data', seen);
      void closed.then(() => r()); // an early exit fails on the assertions below, not by a timeout
      seen();
    });
    proc.kill('SIGINT');
    const code = await closed;
    release();
    expect(out).toContain('■ task canceled');
    expect(code).toBe(4);
    const id = /▶ task (\S+)/.exec(out)![1]!;
    expect((await mur(['tasks', served.url, 'get', id])).out).toMatch(new RegExp(`^${id} {2}canceled`));
  });

  it('speaks HTTP+JSON and gRPC too, when asked and the card offers them', async () => {
    const { freePort } = await import('../cli/serve-kit.ts');
    const grpcPort = await freePort();
    const { served } = await capsule('bindings', { turns: [{ text: 'over rest' }, { text: 'over grpc' }] }, { args: ['--grpc-port', String(grpcPort)] });
    const rest = await mur(['send', served.url, 'one', '--transport', 'rest', '--json']);
    expect(JSON.parse(rest.out)).toMatchObject({ state: 'completed', answer: 'over rest', transport: 'HTTP+JSON' });
    const grpc = await mur(['send', served.url, 'two', '--transport', 'grpc', '--json']);
    expect(grpc.err).toBe('');
    expect(JSON.parse(grpc.out)).toMatchObject({ state: 'completed', answer: 'over grpc', transport: 'GRPC' });
  });
});
