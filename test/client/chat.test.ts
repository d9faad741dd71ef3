/**
 * `mur chat` as a user runs it: `bin/mur chat <url>` in its own process, lines on its stdin, a
 * real `mur serve` capsule. One context for the whole conversation; an input-required question
 * is answered by the next line, in place.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../runtime/wit/packages.ts';
import { capsule, closeAll } from './kit.ts';

afterAll(closeAll);

function chat(args: string[], stdin: string): Promise<{ code: number | null; out: string; err: string }> {
  const proc = spawn(process.execPath, [join(PROJECT_ROOT, 'bin/mur'), 'chat', ...args], { env: { PATH: process.env.PATH }, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  proc.stdin.end(stdin);
  return new Promise((resolve) => proc.once('close', (code) => resolve({ code, out, err })));
}

describe('mur chat', () => {
  it('answers an input-required question with the next line, in place, and keeps one context', async () => {
    const { served, provider } = await capsule(
      'chatty',
      {
        turns: [{ toolCalls: [{ name: 'probe', input: { op: 'ask', prompt: 'Which colour?' } }] }, { text: 'painted it blue' }, { text: 'you are welcome' }],
      },
      { lifecycle: '  conversation: threaded\n' },
    );
    const r = await chat([served.url], 'paint the fence\nblue\nthanks\n');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^chatting with http:\/\/127\.0\.0\.1:\d+\/ \(chatty\) over JSONRPC; /);
    const asked = lines.indexOf('? Which colour?');
    expect(asked).toBeGreaterThan(0);
    // The reply continued the same task: the line after the question is that task's, not a new one.
    const tasks = lines.filter((l) => l.startsWith('▶ task ')).map((l) => l.split(' ')[2]);
    expect(tasks).toHaveLength(3);
    expect(tasks[1]).toBe(tasks[0]);
    expect(tasks[2]).not.toBe(tasks[0]);
    expect(lines).toContain('painted it blue');
    expect(lines.filter((l) => l === 'you are welcome')).toHaveLength(1);
    expect(lines.indexOf('you are welcome')).toBeGreaterThan(lines.lastIndexOf(lines.find((l) => l.startsWith('▶ task ') && l.includes(tasks[2]!))!));
    // One context: the third message's inference saw the whole conversation.
    const last = JSON.stringify(provider.requests.at(-1)!.body);
    expect(last).toContain('paint the fence');
    expect(last).toContain('painted it blue');
    expect(last).toContain('thanks');
  });

  it('a failed task is reported and the conversation goes on; /exit ends it', async () => {
    const { served, provider } = await capsule('chat-errors', {
      turns: [{ error: { status: 400, type: 'invalid_request_error', message: 'scripted refusal' } }, { text: 'still here' }],
    });
    const r = await chat([served.url, '--context-id', 'c1'], 'first\nsecond\n/exit\nnever sent\n');
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/^task failed: .*scripted refusal/);
    expect(r.out).toMatch(/chatting with .* context c1;/);
    // The second message's answer (streamed in as its turn ran) comes after the failure.
    const lines = r.out.trimEnd().split('\n');
    expect(lines.indexOf('still here')).toBeGreaterThan(lines.findIndex((l) => l.startsWith('■ task failed')));
    expect(provider.requests).toHaveLength(2);
  });
});
