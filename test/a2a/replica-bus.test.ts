/**
 * The replica bus (runtime/a2a/store/replica-bus.ts) on a real PostgreSQL server: calls and streams
 * between replicas through LISTEN/NOTIFY, messages larger than one NOTIFY payload, the remote
 * error coming back, and liveness by advisory lock (a replica whose connection dies is seen gone,
 * and a call pending on it fails instead of hanging).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { ReplicaBus, type BusOptions } from '../../runtime/a2a/store/replica-bus.ts';
import { RemoteError, chunksOf } from '../../runtime/a2a/store/bus-envelope.ts';
import { startPostgres, type Postgres } from '../support/postgres.ts';

let server: Postgres;
let url: string;
const buses: ReplicaBus[] = [];
beforeAll(async () => {
  server = await startPostgres();
  url = await server.url('murmur_bus');
}, 120_000);
afterAll(async () => {
  for (const b of buses) await b.close();
  await server?.stop();
});

async function bus(o: BusOptions = {}): Promise<ReplicaBus> {
  const b = await ReplicaBus.open(url, o);
  buses.push(b);
  return b;
}

describe('replica bus (PostgreSQL LISTEN/NOTIFY)', () => {
  it('cuts a message into NOTIFY-sized chunks that join back to it, multi-byte text included', () => {
    const s = JSON.stringify({ text: 'é€😀'.repeat(5000) + 'x'.repeat(9000) });
    const parts = chunksOf(s, 7000);
    expect(parts.length).toBeGreaterThan(3);
    for (const p of parts) expect(Buffer.byteLength(JSON.stringify(p))).toBeLessThanOrEqual(7000);
    expect(parts.join('')).toBe(s);
  });

  it('a call reaches the replica it names and returns its answer; a 1 MiB answer crosses in chunks', async () => {
    const a = await bus();
    const b = await bus();
    expect(a.id).not.toBe(b.id);
    b.handle('echo', async (p: { n: number }, from) => ({ twice: p.n * 2, from, big: 'ü'.repeat(512 * 1024) }));
    const r = (await a.call(b.id, 'echo', { n: 21 })) as { twice: number; from: string; big: string };
    expect(r.twice).toBe(42);
    expect(r.from).toBe(a.id);
    expect(r.big.length).toBe(512 * 1024);
  });

  it('an error thrown by the remote handler comes back with its name, message and data', async () => {
    const a = await bus();
    const b = await bus();
    b.handle('boom', async () => {
      const e = new Error('task x not found') as Error & { metadata: unknown };
      e.name = 'TaskNotFoundError';
      e.metadata = { taskId: 'x' };
      throw e;
    });
    const err = await a.call(b.id, 'boom', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemoteError);
    expect((err as RemoteError).remoteName).toBe('TaskNotFoundError');
    expect((err as RemoteError).message).toBe('task x not found');
    expect((err as RemoteError).data).toEqual({ taskId: 'x' });
  });

  it('a stream delivers every event in order, and a consumer that stops early stops the producer', async () => {
    const a = await bus();
    const b = await bus();
    b.handleStream('count', async (p: { to: number }, emit) => {
      for (let i = 1; i <= p.to; i++) emit({ i, pad: 'z'.repeat(i % 3 === 0 ? 20_000 : 10) });
    });
    const got: number[] = [];
    for await (const ev of a.stream(b.id, 'count', { to: 50 })) got.push((ev as { i: number }).i);
    expect(got).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));

    let stopped!: () => void;
    const producerStopped = new Promise<void>((r) => (stopped = r));
    b.handleStream('forever', async (_p, emit, signal) => {
      emit({ first: true });
      await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
      stopped();
    });
    for await (const ev of a.stream(b.id, 'forever', {})) {
      expect(ev).toEqual({ first: true });
      break;
    }
    await producerStopped;
  });

  it('liveness: a replica whose connection dies is seen gone, and a call pending on it fails', async () => {
    const a = await bus({ livenessMs: 50 });
    let lost!: (e: Error) => void;
    const victimLost = new Promise<Error>((r) => (lost = r));
    const victim = await bus({ onLost: (e: Error) => lost(e) });
    let arrived!: () => void;
    const inHandler = new Promise<void>((r) => (arrived = r));
    victim.handle('hang', () => {
      arrived();
      return new Promise(() => undefined);
    });
    expect(await a.isAlive(victim.id)).toBe(true);
    const pending = a.call(victim.id, 'hang', {}).catch((e: unknown) => e);
    await inHandler;
    // Kill the victim's bus connection from the server side, as a dead pod's socket would end.
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'murmur-replica-bus' AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = $1)`,
      [Number(victim.id)],
    );
    await admin.end();
    expect((await victimLost).message).toMatch(/terminat|ended|Connection/i);
    const err = await pending;
    expect(String(err)).toMatch(new RegExp(`replica ${victim.id} is gone`));
    expect(await a.isAlive(victim.id)).toBe(false);
  });
});
