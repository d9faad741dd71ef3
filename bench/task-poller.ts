/**
 * One A2A client for every arm of a side-by-side bench, so no arm is measured through a client the
 * other does not get: each task goes out as a non-blocking JSON-RPC `message/send`
 * (`configuration.blocking: false`, which this runtime honours and the reference ignores: it always
 * answers `submitted`), and ONE poller sweeps `tasks/get` for every outstanding task every 10 ms.
 * All requests go through one keep-alive agent; a server that answers `connection: close` (the
 * reference does, on every answer) gets a fresh connection per request, which is its own doing.
 *
 * Why not a blocking send for ours and polling for the reference: the old client did exactly that,
 * each of 8 senders polling every 2 ms on a fresh connection from the process that also hosted the
 * scripted provider, so the reference's provider answers queued behind the polling and its time per
 * task read about 60% slower than with one sweeper (issue 42).
 */
import http from 'node:http';

const TERMINAL = new Set(['completed', 'failed', 'canceled', 'rejected']);
/** How often the poller sweeps the outstanding tasks. */
export const SWEEP_MS = 10;

type Rpc = Record<string, unknown> & { result?: { id?: string; status?: { state?: string } } };

/** A JSON-RPC client of one A2A endpoint; requests share a keep-alive agent. */
export class TaskClient {
  private readonly u: URL;
  private readonly agent: http.Agent;
  private readonly waiting = new Map<string, { resolve: () => void; reject: (e: Error) => void }>();
  private sweeping: NodeJS.Timeout | undefined;
  /** Requests sent so far, by method (a bench reports how many `tasks/get` a task cost). */
  readonly sent = new Map<string, number>();

  constructor(url: string, sockets = 16) {
    this.u = new URL(url);
    this.agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  }

  private rpc(method: string, params: unknown): Promise<Rpc> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
    this.sent.set(method, (this.sent.get(method) ?? 0) + 1);
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: this.u.hostname,
          port: this.u.port,
          path: this.u.pathname,
          method: 'POST',
          agent: this.agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString();
            try {
              resolve(JSON.parse(text) as Rpc);
            } catch {
              reject(new Error(`${method} to ${this.u.href}: not JSON: ${text.slice(0, 400)}`));
            }
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  /** Sends task `i` without waiting for it; resolves once the shared poller saw it completed. */
  async task(i: number): Promise<void> {
    const message = { kind: 'message', messageId: `m${i}-${Math.random()}`, role: 'user', parts: [{ kind: 'text', text: `task ${i}` }] };
    const r = await this.rpc('message/send', { message, configuration: { blocking: false } });
    const id = r.result?.id;
    const state = r.result?.status?.state;
    if (state === 'completed') return;
    if (!id || !state || TERMINAL.has(state)) throw new Error(`task ${i}: message/send answered ${JSON.stringify(r).slice(0, 400)}`);
    await new Promise<void>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.sweepSoon();
    });
  }

  private sweepSoon(): void {
    this.sweeping ??= setTimeout(() => void this.sweep(), SWEEP_MS);
  }

  /** One sweep: `tasks/get` of every outstanding task at once; the next starts 10 ms after this one's start. */
  private async sweep(): Promise<void> {
    const started = performance.now();
    await Promise.all(
      [...this.waiting].map(async ([id, w]) => {
        try {
          const r = await this.rpc('tasks/get', { id });
          const state = r.result?.status?.state;
          if (state === 'completed') w.resolve();
          else if (!state || TERMINAL.has(state)) w.reject(new Error(`task ${id}: tasks/get answered ${JSON.stringify(r).slice(0, 400)}`));
          else return;
        } catch (e) {
          w.reject(e as Error);
        }
        this.waiting.delete(id);
      }),
    );
    this.sweeping = undefined;
    if (this.waiting.size) this.sweeping = setTimeout(() => void this.sweep(), Math.max(0, started + SWEEP_MS - performance.now()));
  }

  /** Tasks `from`..`from+count-1` from `senders` concurrent senders, each sending its next task once its last completed. */
  async run(from: number, count: number, senders: number): Promise<void> {
    let next = from;
    await Promise.all(
      Array.from({ length: senders }, async () => {
        while (next < from + count) await this.task(next++);
      }),
    );
  }

  close(): void {
    if (this.sweeping) clearTimeout(this.sweeping);
    this.agent.destroy();
  }
}
