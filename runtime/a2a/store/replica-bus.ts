/**
 * The replica bus: how the `mur serve` replicas of one capsule that share a PostgreSQL store talk
 * to each other, through PostgreSQL's own `LISTEN/NOTIFY` (no protocol, port or broker of ours).
 *
 * - Identity and liveness: each replica holds one dedicated connection (pg's `Client`) for the
 *   bus, and on it a session-level advisory lock on a random key. The key is the replica's id.
 *   PostgreSQL drops the lock when that connection dies (kill -9, OOM, node loss: the server sees
 *   the socket close), so "is replica X alive" is one look at `pg_locks`, with no heartbeat table
 *   and no timeout to tune. A replica that loses its bus connection has lost its identity too:
 *   `onLost` tells the server, which must stop (others may already have failed its tasks).
 * - Addressing: each replica LISTENs on its own channel (`murmur_replica_<id>`), so a message wakes
 *   only the replica it is for.
 * - Size: a NOTIFY payload must be under 8000 bytes, so a message is cut into chunks sent in order
 *   on the same connection; PostgreSQL delivers one session's notifications in commit order, and
 *   the receiver reassembles (bounded by `maxMessageBytes`).
 * - Calls: a request/response (`call`) and a request with a stream of events (`stream`) on top, with
 *   correlation ids; a call to a replica that dies is rejected once its lock is gone (checked every
 *   `livenessMs` while calls are pending; this is the one timer, a fact about production, not tests).
 *
 * pg's Client is the well-kept implementation of the wire protocol (LISTEN is one of its features);
 * what is ours is only the envelope of chunks and correlation ids (bus-envelope.ts).
 */
import { randomInt, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { MurError } from '../../errors.ts';
import { channelOf, chunksOf, errOf, toErr, type Envelope, type Json } from './bus-envelope.ts';

/** Namespace of the advisory locks (first key of the two-int form): 'MUR1'. */
const LOCK_NS = 0x4d555231;
export interface BusOptions {
  /** Largest reassembled message; bigger ones are dropped (and their call fails). Default 32 MiB. */
  maxMessageBytes?: number;
  /** How often pending calls check that their replica is still alive. Default 2000 ms. */
  livenessMs?: number;
  /** The bus connection was lost (not by close()). */
  onLost?: (e: Error) => void;
}

export type CallHandler = (params: Json, from: string) => Promise<Json>;
/** A stream handler emits events; its promise settles when the stream ends; `signal` aborts when the caller goes. */
export type StreamHandler = (params: Json, emit: (ev: Json) => void, signal: AbortSignal, from: string) => Promise<void>;

interface Pending {
  to: string;
  onRes?: (env: Extract<Envelope, { t: 'res' }>) => void;
  onEv?: (ev: Json) => void;
  onEnd?: (err?: Error) => void;
  fail: (e: Error) => void;
}

export class ReplicaBus {
  private readonly handlers = new Map<string, CallHandler>();
  private readonly streams = new Map<string, StreamHandler>();
  private readonly pending = new Map<string, Pending>();
  /** Streams this replica serves, by correlation id: aborted on `stop`. */
  private readonly serving = new Map<string, AbortController>();
  private readonly partial = new Map<string, { from: string; n: number; parts: string[]; bytes: number }>();
  private closed = false;
  private sendChain: Promise<void> = Promise.resolve();
  private watch: NodeJS.Timeout | undefined;
  private readonly maxBytes: number;

  private constructor(
    private readonly client: pg.Client,
    private readonly pool: { query: (q: string, v: unknown[]) => Promise<{ rows: Array<Record<string, unknown>> }> },
    readonly id: string,
    private readonly o: BusOptions,
  ) {
    this.maxBytes = o.maxMessageBytes ?? 32 * 1024 * 1024;
  }

  /**
   * Connect to `url`, take a replica id (a random key whose advisory lock this connection holds)
   * and LISTEN on its channel. `pool` runs the liveness queries, off the bus connection.
   */
  static async open(url: string, o: BusOptions = {}): Promise<ReplicaBus> {
    const { default: pgm } = await import('pg');
    const client = new pgm.Client({ connectionString: url, application_name: 'murmur-replica-bus' });
    try {
      await client.connect();
    } catch (e) {
      throw new MurError('E-STORE-005', `the replica bus cannot connect to the PostgreSQL store: ${e instanceof Error ? e.message : String(e)}`, {
        hint: 'the replicas of a capsule signal each other through LISTEN/NOTIFY on the store’s server: check that it is up',
        cause: e,
      });
    }
    let id: string | undefined;
    for (let tries = 0; tries < 8 && !id; tries++) {
      const key = randomInt(1, 2 ** 31 - 1);
      const r = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::int, $2::int) AS ok', [LOCK_NS, key]);
      if (r.rows[0]?.ok) id = String(key);
    }
    if (!id) {
      await client.end();
      throw new MurError('E-STORE-005', 'the replica bus found no free replica id in 8 tries', {
        hint: 'this should not happen: check pg_locks for stale advisory locks in namespace 1297437233',
      });
    }
    const pool = new pgm.Pool({ connectionString: url, max: 2, application_name: 'murmur-replica-liveness' });
    // An idle connection the server ends is an 'error' on the pool (unheard, it stops the process);
    // the pool drops it and opens another for the next query.
    pool.on('error', (e) => process.stderr.write(`replica bus: an idle PostgreSQL connection ended (${e.message}); the next query opens another\n`));
    const bus = new ReplicaBus(client, pool, id, o);
    client.on('notification', (n) => {
      if (n.channel === channelOf(bus.id) && n.payload !== undefined) bus.onChunk(n.payload);
    });
    const lost = (e: Error): void => {
      if (bus.closed) return;
      bus.closed = true;
      for (const p of bus.pending.values()) p.fail(new MurError('E-STORE-005', `the replica bus lost its connection: ${e.message}`));
      bus.pending.clear();
      bus.o.onLost?.(e);
    };
    client.on('error', lost);
    client.on('end', () => lost(new Error('connection ended')));
    // Channel names are identifiers: quoted, and the id is digits only.
    await client.query(`LISTEN "${channelOf(id)}"`);
    bus.end = async () => {
      await pool.end();
    };
    return bus;
  }

  private end: () => Promise<void> = async () => undefined;

  /** Set (or replace) the listener told when the bus connection is lost. */
  onLostSet(listener: (e: Error) => void): void {
    this.o.onLost = listener;
  }

  /** Whether the replica `id` still holds its lock (its bus connection is alive). */
  async isAlive(id: string): Promise<boolean> {
    if (id === this.id) return !this.closed;
    if (!/^\d+$/.test(id)) return false;
    const r = await this.pool.query(
      `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $1 AND objid = $2 AND objsubid = 2
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [LOCK_NS, Number(id)],
    );
    return Number(r.rows[0]?.n ?? 0) > 0;
  }

  /** Answer `method` calls from other replicas. */
  handle(method: string, h: CallHandler): void {
    this.handlers.set(method, h);
  }

  /** Serve `method` streams to other replicas. */
  handleStream(method: string, h: StreamHandler): void {
    this.streams.set(method, h);
  }

  /** Call `method` on replica `to`; rejects with the remote error, or when `to` dies. */
  call(to: string, method: string, params: Json): Promise<Json> {
    const id = randomUUID();
    return new Promise((resolve, reject) => {
      this.pending.set(id, {
        to,
        onRes: (env) => {
          this.pending.delete(id);
          if (env.err) reject(toErr(env.err));
          else resolve(env.ok);
        },
        fail: (e) => {
          this.pending.delete(id);
          reject(e);
        },
      });
      this.watchLiveness();
      this.send(to, { t: 'req', id, method, params }).catch((e: unknown) => this.pending.get(id)?.fail(e instanceof Error ? e : new Error(String(e))));
    });
  }

  /**
   * Open a stream of `method` on replica `to`: its events, in order, ending when the remote handler
   * ends (or rejects), or `to` dies. Returning early (a consumer that goes away) stops the remote side.
   * At most `maxQueued` events wait for the consumer; past that the stream fails (a reader this
   * slow is told to use tasks/get) rather than grow without bound.
   */
  stream(to: string, method: string, params: Json, maxQueued = 1024): AsyncGenerator<Json, void, undefined> {
    const id = randomUUID();
    const queue: Json[] = [];
    let done: { err?: Error } | undefined;
    let wake: (() => void) | undefined;
    const poke = (): void => {
      const w = wake;
      wake = undefined;
      w?.();
    };
    const finish = (err?: Error): void => {
      if (done) return;
      done = err ? { err } : {};
      this.pending.delete(id);
      poke();
    };
    this.pending.set(id, {
      to,
      onEv: (ev) => {
        if (queue.length >= maxQueued) {
          finish(new MurError('E-A2A-015', `stream from replica ${to} lagged past ${maxQueued} events; use tasks/get for the task`));
          void this.send(to, { t: 'stop', id }).catch(() => undefined);
          return;
        }
        queue.push(ev);
        poke();
      },
      onEnd: (err) => finish(err),
      fail: (e) => finish(e),
    });
    this.watchLiveness();
    const sent = this.send(to, { t: 'req', id, method, params, stream: true }).catch((e: unknown) => finish(e instanceof Error ? e : new Error(String(e))));
    const self = this;
    return (async function* () {
      try {
        await sent;
        for (;;) {
          if (queue.length > 0) {
            yield queue.shift();
            continue;
          }
          if (done) {
            if (done.err) throw done.err;
            return;
          }
          await new Promise<void>((r) => (wake = r));
        }
      } finally {
        if (!done) {
          finish();
          await self.send(to, { t: 'stop', id }).catch(() => undefined);
        }
      }
    })();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.watch);
    for (const a of this.serving.values()) a.abort();
    for (const p of this.pending.values()) p.fail(new MurError('E-STORE-005', 'the replica bus is closing'));
    this.pending.clear();
    await this.client.end().catch(() => undefined);
    await this.end();
  }

  // ---- internals -------------------------------------------------------------------------------

  private watchLiveness(): void {
    if (this.watch) return;
    this.watch = setInterval(() => {
      if (this.pending.size === 0) {
        clearInterval(this.watch);
        this.watch = undefined;
        return;
      }
      const targets = new Set([...this.pending.values()].map((p) => p.to));
      for (const to of targets) {
        void this.isAlive(to).then(
          (alive) => {
            if (alive) return;
            for (const p of [...this.pending.values()])
              if (p.to === to) p.fail(new MurError('E-STORE-005', `replica ${to} is gone (its store connection closed)`));
          },
          () => undefined,
        );
      }
    }, this.o.livenessMs ?? 2000);
    this.watch.unref();
  }

  /** Send one envelope to replica `to`, in chunks, in order, on the bus connection. */
  private async send(to: string, env: Envelope): Promise<void> {
    if (this.closed) throw new MurError('E-STORE-005', 'the replica bus is closed');
    const body = JSON.stringify(env);
    if (Buffer.byteLength(body) > this.maxBytes)
      throw new MurError('E-STORE-005', `a replica bus message of ${Buffer.byteLength(body)} bytes is over the ${this.maxBytes}-byte bound`);
    const parts = chunksOf(body);
    const mid = randomUUID();
    const channel = channelOf(to);
    const payloads = parts.map((d, i) => JSON.stringify({ f: this.id, m: mid, i, n: parts.length, d }));
    // Messages go one after another on the one connection (pg wants no overlapping queries on a
    // Client), so they arrive in the order they were sent. A message of several chunks is one
    // transaction: one round trip and one commit, and PostgreSQL delivers the notifications of one
    // transaction in the order they were sent (its NOTIFY documentation guarantees it).
    const p = this.sendChain.then(async () => {
      if (payloads.length === 1) {
        await this.client.query('SELECT pg_notify($1, $2)', [channel, payloads[0]]);
        return;
      }
      const ch = this.client.escapeLiteral(channel);
      await this.client.query(`BEGIN; ${payloads.map((x) => `SELECT pg_notify(${ch}, ${this.client.escapeLiteral(x)});`).join(' ')} COMMIT;`);
    });
    this.sendChain = p.catch(() => undefined);
    await p;
  }

  private onChunk(payload: string): void {
    let c: { f: string; m: string; i: number; n: number; d: string };
    try {
      c = JSON.parse(payload) as typeof c;
    } catch {
      return; // not ours
    }
    let body: string;
    if (c.n === 1) body = c.d;
    else {
      const key = `${c.f}/${c.m}`;
      const p = this.partial.get(key) ?? { from: c.f, n: c.n, parts: [], bytes: 0 };
      p.parts.push(c.d);
      p.bytes += c.d.length;
      if (p.bytes > this.maxBytes) {
        this.partial.delete(key);
        return;
      }
      if (p.parts.length < p.n) {
        this.partial.set(key, p);
        return;
      }
      this.partial.delete(key);
      body = p.parts.join('');
    }
    let env: Envelope;
    try {
      env = JSON.parse(body) as Envelope;
    } catch {
      return;
    }
    this.dispatch(c.f, env);
  }

  private dispatch(from: string, env: Envelope): void {
    switch (env.t) {
      case 'req':
        if (env.stream) void this.serveStream(from, env);
        else void this.serveCall(from, env);
        return;
      case 'res':
        this.pending.get(env.id)?.onRes?.(env);
        return;
      case 'ev':
        this.pending.get(env.id)?.onEv?.(env.ev);
        return;
      case 'end':
        this.pending.get(env.id)?.onEnd?.(env.err ? toErr(env.err) : undefined);
        return;
      case 'stop':
        this.serving.get(env.id)?.abort();
        return;
    }
  }

  private async serveCall(from: string, env: Extract<Envelope, { t: 'req' }>): Promise<void> {
    const h = this.handlers.get(env.method);
    let res: Envelope;
    try {
      if (!h) throw new Error(`replica ${this.id} has no handler for '${env.method}'`);
      res = { t: 'res', id: env.id, ok: await h(env.params, from) };
    } catch (e) {
      res = { t: 'res', id: env.id, err: errOf(e) };
    }
    await this.send(from, res).catch(() => undefined);
  }

  private async serveStream(from: string, env: Extract<Envelope, { t: 'req' }>): Promise<void> {
    const h = this.streams.get(env.method);
    const abort = new AbortController();
    this.serving.set(env.id, abort);
    let sending: Promise<void> = Promise.resolve();
    const emit = (ev: Json): void => {
      if (abort.signal.aborted) return;
      sending = sending.then(() => this.send(from, { t: 'ev', id: env.id, ev })).catch(() => abort.abort());
    };
    let end: Envelope = { t: 'end', id: env.id };
    try {
      if (!h) throw new Error(`replica ${this.id} has no stream handler for '${env.method}'`);
      await h(env.params, emit, abort.signal, from);
    } catch (e) {
      end = { t: 'end', id: env.id, err: errOf(e) };
    }
    this.serving.delete(env.id);
    await sending;
    await this.send(from, end).catch(() => undefined);
  }
}
