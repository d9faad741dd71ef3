/**
 * reachable (operator/activator/reach.ts): a held request is forwarded only once a TCP connect to
 * the ready pod succeeds — the NetworkPolicy engine may admit a new pod's address a moment after
 * the pod turned Ready, and a forward in that window was refused (ECONNREFUSED) on the real node.
 * Real sockets on loopback: a port nobody listens on refuses; the test starts listening when told
 * of the first refusal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { reachable } from '../../../operator/activator/reach.ts';

const servers: net.Server[] = [];
const children: ChildProcess[] = [];
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const c of children.splice(0)) c.kill();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/**
 * A loopback listener that answers no new SYN until told: a socket listening with a backlog of 0
 * that accepts nothing, its accept queue filled by one connection, so the kernel drops every
 * further SYN, as a NetworkPolicy's DROP rule does (Node's servers always accept, so a Python one).
 * `open()` makes it accept everything from then on.
 */
async function silentListener(): Promise<{ port: number; open: () => void }> {
  const py = spawn('python3', [
    '-c',
    [
      'import socket, sys',
      's = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(0)',
      'print(s.getsockname()[1], flush=True)',
      'sys.stdin.readline()',
      'while True:',
      '    c, _ = s.accept(); c.close()',
    ].join('\n'),
  ]);
  children.push(py);
  const [line] = (await once(py.stdout!, 'data')) as [Buffer];
  const port = Number(line.toString().trim());
  // Connections until one gets no answer: the accept queue is full from then on.
  for (;;) {
    const c = net.connect({ host: '127.0.0.1', port });
    sockets.push(c);
    const answered = await new Promise<boolean>((r) => {
      const t = setTimeout(() => r(false), 300);
      c.once('connect', () => {
        clearTimeout(t);
        r(true);
      });
    });
    if (!answered) break;
  }
  return { port, open: () => py.stdin!.write('accept\n') };
}

/** A loopback port that is free now (listened on, then closed). */
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

describe('the activator forwards only to a pod it can connect to', () => {
  it('a refused connect is tried again, and the pod is reachable once it accepts', async () => {
    const port = await freePort();
    const failures: string[] = [];
    const ok = await reachable({ ip: '127.0.0.1', port }, Date.now() + 30_000, new AbortController().signal, (why) => {
      failures.push(why);
      if (failures.length === 1) {
        const s = net.createServer((c) => c.destroy());
        servers.push(s);
        s.listen(port, '127.0.0.1');
      }
    });
    expect(ok).toBe(true);
    expect(failures[0]).toBe('ECONNREFUSED');
  });

  it('a pod that never accepts is given up at the deadline (the caller then gets a retryable 503)', async () => {
    const port = await freePort();
    const failures: string[] = [];
    expect(await reachable({ ip: '127.0.0.1', port }, Date.now() + 300, new AbortController().signal, (w) => failures.push(w))).toBe(false);
    expect(failures.length).toBeGreaterThan(0);
  });

  it('a caller that went away ends the wait', async () => {
    const port = await freePort();
    const gone = new AbortController();
    const p = reachable({ ip: '127.0.0.1', port }, Date.now() + 60_000, gone.signal, () => gone.abort());
    expect(await p).toBe(false);
  });

  it('a pod that accepts at once is reachable on the first try', async () => {
    const s = net.createServer((c) => c.destroy());
    servers.push(s);
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const failures: string[] = [];
    expect(
      await reachable({ ip: '127.0.0.1', port: (s.address() as net.AddressInfo).port }, Date.now() + 5_000, new AbortController().signal, (w) =>
        failures.push(w),
      ),
    ).toBe(true);
    expect(failures).toEqual([]);
  });

  it('a connect whose SYN goes unanswered (a policy still dropping) is given up early and tried again, inside a hold shorter than the kernel’s 1 s SYN resend', async () => {
    const l = await silentListener();
    const failures: string[] = [];
    const ok = await reachable({ ip: '127.0.0.1', port: l.port }, Date.now() + 900, new AbortController().signal, (why) => {
      failures.push(why);
      if (failures.length === 1) l.open();
    });
    expect(failures[0]).toMatch(/^no answer to a connect within \d+ ms$/);
    expect(ok).toBe(true);
  });
});
