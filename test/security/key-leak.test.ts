/**
 * The provider key cannot be read by a process a tool starts (issue 14, item 5): the real shell
 * tool, run by a stand-in for the runtime process (fixtures/key-holder.ts) started the way the
 * image starts `mur` — as a non-root user, from an execute-only node binary — tries every read we
 * know of: /proc/<runtime pid>/environ, cmdline, fd/*, mem, every /proc/* /environ, its own env.
 * A control run from a readable node binary shows the same attempts do find the key when the
 * runtime is dumpable, so the test fails if the image's execute-only node is ever lost.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./fixtures/key-holder-entry.mjs', import.meta.url));
const KEY = `sk-test-${crypto.randomUUID()}`;
const NOBODY = 65534;
// Under /tmp itself: the per-run test tmpdir is private to root, and uid 65534 must reach the binary.
const dir = mkdtempSync('/tmp/keyleak-');
const started: ChildProcess[] = [];
// A stand-in (and the tool processes it started) never outlives the suite: a dumpable one left
// running would hold its key in a readable environ.
afterAll(() => {
  for (const c of started) if (c.exitCode === null && c.pid) process.kill(c.pid, 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

interface Report {
  pid: string;
  keyTaken: boolean;
  keyDigest: string;
  envStillHasKey: boolean;
  results: Array<{ cmd: string; stdout: string; stderr: string }>;
}

function runtimeStandIn(nodeMode: number): Promise<Report> {
  const node = path.join(dir, `node-${nodeMode.toString(8)}`);
  copyFileSync(process.execPath, node);
  chmodSync(node, nodeMode);
  const workdir = mkdtempSync(path.join(dir, 'work-'));
  chownSync(workdir, NOBODY, NOBODY);
  chmodSync(dir, 0o755);
  const child = spawn(node, [FIXTURE], {
    cwd: REPO,
    uid: NOBODY,
    gid: NOBODY,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: workdir, MURMUR_INFERENCE_API_KEY: KEY, KEYLEAK_WORKDIR: workdir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  started.push(child);
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!)) : reject(new Error(`stand-in exited ${code}: ${err}`))));
  });
}

describe('provider key leak', () => {
  it('needs root to start the runtime stand-in as an unprivileged user (CI runs as root)', () => {
    expect(process.getuid?.(), 'run this suite as root: it starts the runtime stand-in as uid 65534').toBe(0);
  });

  it('no process a tool starts can read the key: not from /proc/<runtime pid>/environ, cmdline, fd, mem, nor its own env', async () => {
    const r = await runtimeStandIn(0o711);
    expect(r.keyTaken).toBe(true);
    expect(r.keyDigest).toBe(createHash('sha256').update(KEY).digest('hex'));
    expect(r.envStillHasKey).toBe(false);
    for (const a of r.results) {
      for (const text of [a.stdout, a.stderr]) {
        const at = text.indexOf(KEY);
        // On a failure, say which /proc entry gave the key away (the loop prints "== <file>" first).
        const where = at < 0 ? '' : text.slice(0, at).split('== ').at(-1)!.split('\n')[0];
        expect(at, `${a.cmd}: key found in ${where} (stand-in pid ${r.pid})`).toBe(-1);
      }
    }
    const environ = r.results.find((a) => a.cmd === `cat /proc/${r.pid}/environ`)!;
    expect(environ.stderr).toMatch(/Permission denied/);
  });

  it('control: from a readable node binary (a dumpable runtime) the same attempt does find the key', async () => {
    const r = await runtimeStandIn(0o755);
    const environ = r.results.find((a) => a.cmd === `cat /proc/${r.pid}/environ`)!;
    expect(environ.stdout).toContain(KEY);
  });
});
