/**
 * The provider key cannot be read by a process a tool starts (issue 14, item 5): the real shell
 * tool, run by a stand-in for the runtime process (fixtures/key-holder.ts) started the way the
 * image starts `mur` — as a non-root user without new privileges, with the dynamic loader
 * execute-only (the image's `chmod 0711` of the ELF interpreter: the kernel then makes every
 * dynamically linked program that user starts non-dumpable) — tries every read we know of:
 * /proc/<runtime pid>/environ, cmdline, fd/*, mem, every /proc/* /environ, its own env.
 * The loader is made execute-only only inside a private mount namespace of the stand-in (a bind
 * mount of an execute-only copy over the real file), so the host is left as it was. A control run
 * with a readable copy shows the same attempts do find the key when the runtime is dumpable, so
 * the test fails if the image's execute-only loader is ever lost.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, copyFileSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
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
  uid: number;
  keyTaken: boolean;
  keyDigest: string;
  envStillHasKey: boolean;
  results: Array<{ cmd: string; stdout: string; stderr: string }>;
}

/** The ELF interpreter (PT_INTERP) a 64-bit little-endian executable names. */
function elfInterpreter(file: string): string {
  const b = readFileSync(file);
  const phoff = Number(b.readBigUInt64LE(0x20));
  const phentsize = b.readUInt16LE(0x36);
  for (let i = 0; i < b.readUInt16LE(0x38); i++) {
    const ph = phoff + i * phentsize;
    if (b.readUInt32LE(ph) !== 3) continue; // PT_INTERP
    const off = Number(b.readBigUInt64LE(ph + 8));
    return b.subarray(off, off + Number(b.readBigUInt64LE(ph + 32)) - 1).toString('latin1');
  }
  throw new Error(`${file} names no ELF interpreter (statically linked?): the image's protection needs a dynamically linked node`);
}

function runtimeStandIn(loaderMode: number, guard = false): Promise<Report> {
  const node = path.join(dir, 'node');
  copyFileSync(process.execPath, node);
  chmodSync(node, 0o755);
  const loader = realpathSync(elfInterpreter(node));
  const loaderCopy = path.join(dir, `ld-${loaderMode.toString(8)}.so`);
  copyFileSync(loader, loaderCopy);
  chmodSync(loaderCopy, loaderMode);
  const workdir = mkdtempSync(path.join(dir, 'work-'));
  chownSync(workdir, NOBODY, NOBODY);
  chmodSync(dir, 0o755);
  // unshare, sh, setpriv and env all exec, so the stand-in is this child's own pid. setpriv drops
  // to uid 65534 with no_new_privs, as the pod's securityContext (runAsNonRoot,
  // allowPrivilegeEscalation: false); `env` makes the exec of node come from a process that is
  // already that user, as runc's exec of the entrypoint is: a program setpriv itself execs stays
  // dumpable even from an unreadable binary (measured; an execute-only node as well), so the
  // test would show setpriv's behaviour, not the image's.
  const child = spawn(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      '--',
      'sh',
      '-c',
      'mount --bind "$0" "$1" && exec setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs -- env -- "$2" "$3"',
      loaderCopy,
      loader,
      node,
      FIXTURE,
    ],
    {
      cwd: REPO,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: workdir,
        MURMUR_INFERENCE_API_KEY: KEY,
        KEYLEAK_WORKDIR: workdir,
        ...(guard ? { KEYLEAK_GUARD: '1' } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
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

  /** Every attempt's output is free of the key; on a failure, says which /proc entry gave it away. */
  function expectNoKey(r: Report): void {
    for (const a of r.results) {
      for (const text of [a.stdout, a.stderr]) {
        const at = text.indexOf(KEY);
        // The loop prints "== <file>" before each file.
        const where = at < 0 ? '' : text.slice(0, at).split('== ').at(-1)!.split('\n')[0];
        expect(at, `${a.cmd}: key found in ${where} (stand-in pid ${r.pid})`).toBe(-1);
      }
    }
  }

  it('mur guards itself where the image does not: with a readable loader, its start-up guard (non-dumpable, start-up blocks scrubbed) keeps the key from every attempt', async () => {
    const r = await runtimeStandIn(0o755, true);
    expect(r.uid).toBe(NOBODY);
    expect(r.keyTaken).toBe(true);
    expectNoKey(r);
    const environ = r.results.find((a) => a.cmd === `cat /proc/${r.pid}/environ`)!;
    expect(environ.stderr).toMatch(/Permission denied/);
  });

  it('no process a tool starts can read the key: not from /proc/<runtime pid>/environ, cmdline, fd, mem, nor its own env', async () => {
    const r = await runtimeStandIn(0o711);
    // The same uid as the tool, and no more privilege: only the kernel's non-dumpable mark stops it.
    expect(r.uid).toBe(NOBODY);
    expect(r.keyTaken).toBe(true);
    expect(r.keyDigest).toBe(createHash('sha256').update(KEY).digest('hex'));
    expect(r.envStillHasKey).toBe(false);
    expectNoKey(r);
    const environ = r.results.find((a) => a.cmd === `cat /proc/${r.pid}/environ`)!;
    expect(environ.stderr).toMatch(/Permission denied/);
  });

  it('control: with a readable loader (a dumpable runtime) the same attempt does find the key', async () => {
    const r = await runtimeStandIn(0o755);
    const environ = r.results.find((a) => a.cmd === `cat /proc/${r.pid}/environ`)!;
    expect(environ.stdout).toContain(KEY);
  });
});
