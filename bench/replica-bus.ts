/**
 * The replica bus (runtime/a2a/store/replica-bus.ts): what one call between two replicas costs over a
 * real PostgreSQL server on loopback (Debian's, started by test/support/postgres.ts), against one
 * plain query round trip on the same server (the floor any store read pays). Each figure is the
 * mean of `--ops` sequential operations; arms alternate round by round.
 * - `SELECT 1`: one query on a pg Client.
 * - bus call, small: request + response, one NOTIFY each way, handler answering at once (what a
 *   relayed tasks/cancel adds on top of the cancel itself).
 * - bus call, 64 KiB answer: the response cut into ten NOTIFY chunks (a large task snapshot).
 *
 *   node --import tsx bench/replica-bus.ts [--rounds 9] [--ops 200]
 */
import pg from 'pg';
import { ReplicaBus } from '../runtime/a2a/store/replica-bus.ts';
import { startPostgres } from '../test/support/postgres.ts';
import { fmtTime, machineLine, paired, pairedRows, table, numArg } from './paired.ts';

export async function benchReplicaBus(): Promise<string> {
  const rounds = numArg('rounds', 9);
  const ops = numArg('ops', 200);
  const server = await startPostgres();
  try {
    const url = await server.url('murmur_bench_bus');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const a = await ReplicaBus.open(url);
    const b = await ReplicaBus.open(url);
    const big = 'x'.repeat(64 * 1024);
    b.handle('small', async () => ({ ok: true }));
    b.handle('big', async () => ({ big }));
    const each = (f: () => Promise<unknown>) => async () => {
      const t = performance.now();
      for (let i = 0; i < ops; i++) await f();
      return (performance.now() - t) / ops;
    };
    const res = await paired(
      [
        { name: 'per operation, SELECT 1', run: each(() => client.query('SELECT 1')) },
        { name: 'per operation, bus call small', run: each(() => a.call(b.id, 'small', {})) },
        { name: 'per operation, bus call 64 KiB', run: each(() => a.call(b.id, 'big', {})) },
      ],
      rounds,
    );
    await a.close();
    await b.close();
    await client.end();
    return [`replica bus (PostgreSQL LISTEN/NOTIFY on loopback; ${rounds} rounds × ${ops} ops)`, table(pairedRows(res, fmtTime)), machineLine()].join('\n');
  } finally {
    await server.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchReplicaBus());
