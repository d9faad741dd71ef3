/**
 * `mur tasks <target> list|get|cancel`, API keys from a file and from the environment, and each
 * error a user meets before a task runs: a bad target, an unreachable capsule, a missing or
 * refused key, a bad subcommand. Real `mur serve` processes on 127.0.0.1.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tmp } from '../loop/kit.ts';
import { freePort, type Served } from '../cli/serve-kit.ts';
import { capsule, closeAll, mur } from './kit.ts';

afterAll(closeAll);

const KEY = `cli-key-${'k'.repeat(20)}`;
let plain: Served;
let keyed: Served;
let keyFile: string;

beforeAll(async () => {
  ({ served: plain } = await capsule('listed', { turns: [{ text: 'first answer' }, { text: 'second answer' }] }));
  const keys = join(tmp('client-keys-'), 'keys.txt');
  writeFileSync(keys, `cli-user:${KEY}\n`);
  ({ served: keyed } = await capsule(
    'keyed',
    { turns: [{ text: 'key from file' }, { text: 'key from env' }, { text: 'key over grpc' }] },
    { args: ['--api-keys', keys, '--grpc-port', String(await freePort())] },
  ));
  keyFile = join(tmp('client-keyfile-'), 'key');
  writeFileSync(keyFile, `# the capsule's key\n${KEY}\n`);
});

describe('mur tasks', () => {
  it('lists the caller’s tasks newest first, gets one with its answer, and a final one cannot be canceled', async () => {
    const a = JSON.parse((await mur(['send', plain.url, 'one', '--json'])).out);
    const b = JSON.parse((await mur(['send', plain.url, 'two', '--json', '--context-id', a.contextId])).out);
    const list = await mur(['tasks', plain.url, 'list']);
    expect(list.code).toBe(0);
    expect(list.lines[0]).toMatch(new RegExp(`^${b.taskId} {2}completed +${a.contextId} {2}second answer$`));
    expect(list.lines[1]).toMatch(new RegExp(`^${a.taskId} {2}completed +${a.contextId} {2}first answer$`));
    const json = JSON.parse((await mur(['tasks', plain.url, 'list', '--json', '--page-size', '1'])).out);
    expect(json.tasks).toHaveLength(1);
    expect(json.nextPageToken).toBeTruthy();
    const page2 = JSON.parse((await mur(['tasks', plain.url, 'list', '--json', '--page-size', '1', '--page-token', json.nextPageToken])).out);
    expect(page2.tasks.map((t: { taskId: string }) => t.taskId)).toEqual([a.taskId]);
    expect((await mur(['tasks', plain.url, 'list', '--state', 'failed'])).out).toBe('(no tasks)');
    expect((await mur(['tasks', plain.url, 'list', '--state', 'done'])).err).toMatch(/--state must be one of submitted, working, .* got "done"/);
    const get = await mur(['tasks', plain.url, 'get', a.taskId]);
    expect(get.lines).toEqual([expect.stringMatching(new RegExp(`^${a.taskId} {2}completed`)), 'first answer']);
    const cancel = await mur(['tasks', plain.url, 'cancel', a.taskId]);
    expect(cancel.code).toBe(1);
    expect(cancel.err).toMatch(new RegExp(`answered an error while canceling task ${a.taskId}.*\\[E-CLI-034\\]`));
    const unknown = await mur(['tasks', plain.url, 'get', '00000000-0000-4000-8000-000000000000']);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/\[E-CLI-034\]/);
  });

  it('a missing or unknown subcommand, or get without an id, is E-CLI-041', async () => {
    expect((await mur(['tasks', plain.url])).err).toMatch(/no subcommand \[E-CLI-041\]/);
    expect((await mur(['tasks', plain.url, 'delete', 'x'])).err).toMatch(/unknown subcommand 'delete' \[E-CLI-041\]/);
    expect((await mur(['tasks', plain.url, 'get'])).err).toMatch(/needs a task id \[E-CLI-041\]/);
  });
});

describe('credentials and errors', () => {
  it('sends the API key from --api-key-file, or from $MURMUR_A2A_API_KEY', async () => {
    const fromFile = await mur(['send', keyed.url, 'hi', '--api-key-file', keyFile]);
    expect(fromFile.code).toBe(0);
    expect(fromFile.lines).toContain('key from file');
    const fromEnv = await mur(['send', keyed.url, 'hi'], { env: { MURMUR_A2A_API_KEY: KEY } });
    expect(fromEnv.code).toBe(0);
    expect(fromEnv.lines).toContain('key from env');
    // The caller's own tasks: the keyed caller sees both; the key never appears in output.
    const list = await mur(['tasks', keyed.url, 'list', '--api-key-file', keyFile]);
    expect(list.lines).toHaveLength(2);
    expect(list.out + list.err).not.toContain(KEY);
  });

  it('no key for a keyed capsule, or a refused one, is E-CLI-033 and never echoes the key', async () => {
    const none = await mur(['send', keyed.url, 'hi']);
    expect(none.code).toBe(1);
    expect(none.err).toMatch(/requires a credential \(HTTP 401\) \[E-CLI-033\]\n {2}hint: pass an API key/);
    const wrong = join(tmp('client-wrong-'), 'key');
    writeFileSync(wrong, 'not-the-key-but-long-enough\n');
    const refused = await mur(['send', keyed.url, 'hi', '--api-key-file', wrong]);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/refused the credential \(HTTP 401\) \[E-CLI-033\]/);
    expect(refused.err).not.toContain('not-the-key');
    const tasks = await mur(['tasks', keyed.url, 'list', '--api-key-file', wrong]);
    expect(tasks.err).toMatch(/\[E-CLI-033\]/);
    // Over gRPC the key travels as metadata and the refusal is a status, not an HTTP answer.
    const grpcRefused = await mur(['send', keyed.url, 'hi', '--transport', 'grpc', '--api-key-file', wrong]);
    expect(grpcRefused.code).toBe(1);
    expect(grpcRefused.err).toMatch(/refused the credential \(HTTP 401\) \[E-CLI-033\]/);
    const grpc = await mur(['send', keyed.url, 'hi', '--transport', 'grpc', '--api-key-file', keyFile, '--json']);
    expect(JSON.parse(grpc.out)).toMatchObject({ state: 'completed', answer: 'key over grpc', transport: 'GRPC' });
  });

  it('an unusable key file names the file and line (E-CLI-031)', async () => {
    const empty = join(tmp('client-empty-'), 'key');
    writeFileSync(empty, '# nothing here\n\n');
    expect((await mur(['send', keyed.url, 'hi', '--api-key-file', empty])).err).toMatch(/holds no key \[E-CLI-031\]/);
    const pairs = join(tmp('client-pairs-'), 'key');
    writeFileSync(pairs, 'holder: some key\n');
    expect((await mur(['send', keyed.url, 'hi', '--api-key-file', pairs])).err).toMatch(/line 1 is not a single key .*\[E-CLI-031\]/);
    expect((await mur(['send', keyed.url, 'hi', '--api-key-file', '/nonexistent/key'])).err).toMatch(/cannot read it \(ENOENT\) \[E-CLI-031\]/);
  });

  it('an unreachable capsule is E-CLI-032, naming the URL', async () => {
    const port = await freePort();
    const r = await mur(['send', `http://127.0.0.1:${port}/`, 'anyone?']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(new RegExp(`capsule at http://127\\.0\\.0\\.1:${port}/ unreachable while reading its agent card: ECONNREFUSED \\[E-CLI-032\\]`));
  });

  it('a target that is neither a URL nor capsule/<name> is E-CLI-030; a missing text is a usage error', async () => {
    expect((await mur(['send', 'ftp://example.org/', 'x'])).err).toMatch(/neither an http\(s\) URL nor capsule\/<name> \[E-CLI-030\]/);
    expect((await mur(['send', 'capsule/Bad_Name', 'x'])).err).toMatch(/not a Kubernetes object name \[E-CLI-030\]/);
    expect((await mur(['send', 'http://user:pw@127.0.0.1:1/', 'x'])).err).toMatch(/carries credentials in the URL \[E-CLI-030\]/);
    const usage = await mur(['send', plain.url]);
    expect(usage.code).toBe(2);
    expect(usage.err).toMatch(/needs the task text after the target \(see mur send --help\)/);
  });

  it('--transport names a binding the card does not offer: E-CLI-034', async () => {
    const r = await mur(['send', plain.url, 'x', '--transport', 'grpc']);
    expect(r.err).toMatch(/offers JSONRPC, HTTP\+JSON, not GRPC .*\[E-CLI-034\]/);
  });

  it('--help explains targets, credentials and exit statuses', async () => {
    const r = await mur(['send', '--help']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/capsule\/<name> \[-n <namespace>\]/);
    expect(r.out).toMatch(/3 input-required/);
    expect((await mur(['tasks', '--help'])).out).toMatch(/list \| get <task-id> \| cancel <task-id>/);
    expect((await mur(['chat', '--help'])).out).toMatch(/your next line answers that task/);
    const top = await mur(['--help']);
    expect(top.out).toMatch(/send <target> "text" +send a task to a capsule/);
    expect(top.out).toMatch(/chat <target> +talk with a capsule/);
    expect(top.out).toMatch(/tasks <target> <list\|get\|cancel>/);
  });
});
