/**
 * A script capsule runs under its own grant: files it writes in its granted directory persist in
 * the session workdir; every escape is refused with a clear error, and the runtime carries on.
 */
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptSession } from '../../runtime/script/script-session.ts';
import { demoYaml, program, results, task, traceOf, useScriptSessions } from './helpers.ts';

const sessions = useScriptSessions();
let server: Server;
let port = 0;
let hits = 0;

beforeAll(async () => {
  server = createServer((_q, r) => {
    hits++;
    r.end('hello from the host');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});

afterAll(() => {
  server?.close();
});

function session(capabilities: string, hostEnv?: NodeJS.ProcessEnv): Promise<ScriptSession> {
  return sessions.open(demoYaml({ capabilities }), hostEnv);
}

describe('filesystem', () => {
  it('writes and reads back a file in its scope; the file persists in the session workdir', async () => {
    const s = await session('  filesystem:\n    scope: data');
    expect(s.grantedDir).toBe(path.join(s.staged.workdir.dir, 'data'));
    const out = await s.runTask(
      task(
        program(
          { op: 'mkdir', path: 'notes' },
          { op: 'write', path: 'notes/kept.txt', text: 'written by the capsule' },
          { op: 'read', path: 'notes/kept.txt' },
          { op: 'task' },
        ),
      ),
    );
    expect(out.exit).toBe('completed');
    const [, write, read, taskText] = results(out.text);
    expect(write).toMatchObject({ ok: true, value: 22 });
    expect(read).toMatchObject({ ok: true, value: 'written by the capsule' });
    // task.md is in the granted directory.
    expect(JSON.parse(taskText!.value).steps).toHaveLength(4);
    expect(readFileSync(path.join(s.staged.workdir.dir, 'data', 'notes', 'kept.txt'), 'utf8')).toBe('written by the capsule');
    expect(readFileSync(path.join(s.grantedDir, 'task.md'), 'utf8')).toContain('"op":"mkdir"');
    // A later task in the same session sees the file.
    const again = await s.runTask(task(program({ op: 'read', path: 'notes/kept.txt' })));
    expect(results(again.text)[0]!.value).toBe('written by the capsule');
  });

  it('refuses writing outside its dir, .. paths and symlinks pointing out', async () => {
    const s = await session('  filesystem:\n    scope: data');
    const wd = s.staged.workdir.dir;
    writeFileSync(path.join(wd, 'secret.txt'), 'outside the grant');
    mkdirSync(s.grantedDir, { recursive: true });
    symlinkSync(path.join(wd, 'secret.txt'), path.join(s.grantedDir, 'abs-link.txt'));
    symlinkSync('../secret.txt', path.join(s.grantedDir, 'rel-link.txt'));
    symlinkSync(wd, path.join(s.grantedDir, 'dir-link'));
    const out = await s.runTask(
      task(
        program(
          { op: 'write', path: path.join(wd, 'planted-abs.txt'), text: 'x' },
          { op: 'write', path: '../planted-dotdot.txt', text: 'x' },
          { op: 'write', path: 'sub/../../planted-nested.txt', text: 'x' },
          { op: 'read', path: '../secret.txt' },
          { op: 'read', path: 'abs-link.txt' },
          { op: 'read', path: 'rel-link.txt' },
          { op: 'write', path: 'rel-link.txt', text: 'overwrite through the link' },
          { op: 'write', path: 'dir-link/planted-via-dir-link.txt', text: 'x' },
          { op: 'read', path: path.join(wd, 'secret.txt') },
          { op: 'ping' },
        ),
      ),
    );
    expect(out.exit).toBe('completed');
    const r = results(out.text);
    expect(r.slice(0, 9).map((x) => x.ok)).toEqual(Array(9).fill(false));
    for (const x of r.slice(0, 9)) expect(x.error).toMatch(/not-permitted|no-entry|access/);
    expect(r[9]!.value).toBe('pong');
    for (const f of ['planted-abs.txt', 'planted-dotdot.txt', 'planted-nested.txt', 'planted-via-dir-link.txt'])
      expect(existsSync(path.join(wd, f)), f).toBe(false);
    expect(readFileSync(path.join(wd, 'secret.txt'), 'utf8')).toBe('outside the grant');
  });
});

describe('environment', () => {
  it('sees only allowlisted variables, and never credential-shaped ones', async () => {
    const env = { GRANTED: 'yes', MURMUR_TEST_SECRET: 'do-not-leak', MY_TOKEN: 'tok', PATH: '/usr/bin' };
    const s = await session('  env:\n    allow: [GRANTED, MY_TOKEN]', env);
    const out = await s.runTask(
      task(
        program(
          { op: 'envAll' },
          { op: 'env', name: 'GRANTED' },
          { op: 'env', name: 'MURMUR_TEST_SECRET' },
          { op: 'env', name: 'MY_TOKEN' },
          { op: 'env', name: 'PATH' },
        ),
      ),
    );
    const [all, granted, secret, token, pathVar] = results(out.text);
    expect(all!.value).toEqual(['GRANTED']);
    expect(granted!.value).toBe('yes');
    expect(secret!.value).toBeNull();
    expect(token!.value).toBeNull();
    expect(pathVar!.value).toBeNull();
  });
});

describe('network', () => {
  it('refuses outgoing HTTP to an unlisted destination without connecting, and allows a listed one', async () => {
    const denied = await session('  filesystem:\n    scope: .');
    const before = hits;
    const t = task(program({ op: 'fetch', url: `http://127.0.0.1:${port}/` }, { op: 'ping' }));
    const out = await denied.runTask(t);
    const [fetchDenied, ping] = results(out.text);
    // The refusal is in the trace: which component, where it tried to go, in which task.
    expect(
      traceOf(denied.staged)
        .filter((e) => e.event_type === 'network_denied')
        .map(({ component_kind, component, destination, task_id }) => ({ component_kind, component, destination, task_id })),
    ).toEqual([{ component_kind: 'capsule', component: 'demo', destination: `http://127.0.0.1:${port}`, task_id: t.taskId }]);
    expect(fetchDenied!.ok).toBe(false);
    // The host answers wasi:http HttpRequestDenied; componentize-js's fetch reports it generically.
    expect(fetchDenied!.error).toMatch(/fetch_https: An error occurred while using the host API|denied/i);
    expect(ping!.value).toBe('pong');
    expect(hits).toBe(before);

    const allowed = await session(`  network:\n    allow: ["127.0.0.1:${port}"]`);
    const ok = await allowed.runTask(task(program({ op: 'fetch', url: `http://127.0.0.1:${port}/` })));
    expect(results(ok.text)[0]).toEqual({ op: 'fetch', ok: true, value: '200 hello from the host' });
    expect(hits).toBe(before + 1);
    expect(traceOf(allowed.staged).some((e) => e.event_type === 'network_denied')).toBe(false);
  });

  it('a wildcard grant lets a request to a name below its domain through, and refuses the domain itself', async () => {
    const s = await session('  network:\n    allow: ["*.example.test"]');
    const t = task(program({ op: 'fetch', url: 'http://api.example.test/' }, { op: 'fetch', url: 'http://example.test/' }));
    const [below, domain] = results((await s.runTask(t)).text);
    // Only the domain itself is refused by the grant; the name below it passed the grant and went
    // on to DNS, where nothing answers for .test.
    expect(
      traceOf(s.staged)
        .filter((e) => e.event_type === 'network_denied')
        .map((e) => e.destination),
    ).toEqual(['http://example.test:80']);
    expect(below!.ok).toBe(false);
    expect(domain!.ok).toBe(false);
  });
});

describe('limits', () => {
  it('stops a spin loop at the deadline with a clear error, and the next task runs', async () => {
    const s = await session('  limits:\n    deadline_seconds: 5');
    // The spin never ends on its own: only the deadline ends this task (a broken one fails by the test timeout).
    const spun = await s.runTask(task(program({ op: 'ping' }, { op: 'spin' })));
    expect(spun.exit).toBe('failed');
    expect(spun.reason).toBe(
      'demo: run.run did not finish within its 5000 ms deadline (capabilities.limits.deadline_seconds); the instance was stopped [E-HOST-003]',
    );
    // Steps before the spin left their partial answer in the workdir.
    expect(JSON.parse(readFileSync(path.join(s.grantedDir, 'out', 'result.txt'), 'utf8')).results[0].value).toBe('pong');
    const next = await s.runTask(task(program({ op: 'ping' })));
    expect(next.exit).toBe('completed');
    expect(results(next.text)[0]!.value).toBe('pong');
    const ends = traceOf(s.staged).filter((e) => e.event_type === 'task_end');
    expect(ends.map((e) => e.exit_status)).toEqual(['failed', 'ok']);
    expect(ends[0].reason).toContain('E-HOST-003');
  });

  it('stops a memory balloon at the cap with a clear error, and the next task runs', async () => {
    const s = await session('  limits:\n    memory_bytes: 100663296');
    const grown = await s.runTask(task(program({ op: 'grow', mb: 8 })));
    expect(grown.exit).toBe('failed');
    expect(grown.reason).toMatch(
      /^demo: run\.run grew linear memory to \d+ MiB and asked for \d+ MiB more, past its 96 MiB cap; the instance was stopped \[E-HOST-004\]$/,
    );
    const next = await s.runTask(task(program({ op: 'ping' })));
    expect(results(next.text)[0]!.value).toBe('pong');
  });

  it('a trap fails the task with E-HOST-005 and the session carries on', async () => {
    const s = await session('  filesystem:\n    scope: .');
    const trapped = await s.runTask(task(program({ op: 'trap' })));
    expect(trapped.exit).toBe('failed');
    expect(trapped.reason).toMatch(/demo: run\.run trapped.*\[E-HOST-005\]/);
    expect((await s.runTask(task('plain text task'))).text).toBe('echo: plain text task');
  });

  it('cancels a running capsule on abort', async () => {
    const s = await session('  filesystem:\n    scope: .');
    const ac = new AbortController();
    // The capsule invokes a tool, then spins forever: abort when the host reports that invoke done,
    // so the capsule is running; only the abort ends the spin.
    const io = { artifact: (a: { name: string }) => a.name === 'tool-call' && ac.abort(new Error('stop now')) };
    const r = await s.runTask(task(program({ op: 'invoke', name: 'echo-tool', data: 'x' }, { op: 'spin' })), { signal: ac.signal, io });
    expect(r).toEqual({ exit: 'canceled', reason: 'stop now' });
    expect((await s.runTask(task('after'))).text).toBe('echo: after');
    expect(
      traceOf(s.staged)
        .filter((e) => e.event_type === 'task_end')
        .map((e) => e.exit_status),
    ).toEqual(['canceled', 'ok']);
  });
});

describe('guest clocks', () => {
  it('performance.now() works in a componentize-js capsule', async () => {
    const s = await session('  filesystem:\n    scope: .');
    const r = await s.runTask(task(program({ op: 'perf' })));
    expect(typeof results(r.text)[0]!.value).toBe('number');
  });

  // preview2-shim 0.26.1 lowers wasi:clocks/wall-clock.now wrongly (BigInt64Array indexed with
  // retptr >> 2), which made Date.now() trap the guest; the host's wall clock avoids that lowering.
  it('Date.now() works in a componentize-js capsule (the host works around a preview2-shim lowering bug)', async () => {
    const s = await session('  filesystem:\n    scope: .');
    const r = await s.runTask(task(program({ op: 'now' })));
    expect(r.exit).toBe('completed');
  });
});

describe('answer file', () => {
  it('an answer over 1 MiB fails the task with E-SCRIPT-006', async () => {
    const s = await session('  filesystem:\n    scope: .');
    // The `task` step echoes the whole task text into the answer.
    const r = await s.runTask(task(JSON.stringify({ steps: [{ op: 'task' }], pad: 'x'.repeat(1100 * 1024) })));
    expect(r.exit).toBe('failed');
    expect(r.reason).toMatch(/^the capsule's out\/result\.txt is \d+ bytes, over the 1048576 byte limit \[E-SCRIPT-006\]$/);
    expect((await s.runTask(task('small'))).text).toBe('echo: small');
  });
});
