/**
 * A2A throughput: `message/send` → completed with an instant executor, in tasks per second,
 * against a bare express JSON-RPC echo measured in the same run (target: ≥ 50% of the echo).
 *
 *   node --import tsx bench/a2a.ts [--seconds 3] [--concurrency 32]
 *
 * Prints one line per target and the ratio; also a JSON summary on the last line.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { taskExecutor } from '../runtime/compose/a2a-bridge.ts';
import { endTurn, openReplay } from '../test/loop/replay-kit.ts';
import express from 'express';
import { startA2AServer } from '../runtime/a2a/server.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
};
const SECONDS = arg('seconds', 3);
const CONCURRENCY = arg('concurrency', 32);
const ROUNDS = arg('rounds', 2);

function body(method: string, i: number): string {
  const message =
    method === 'SendMessage'
      ? { messageId: `m${i}`, role: 'ROLE_USER', parts: [{ text: 'ping' }] }
      : { kind: 'message', messageId: `m${i}`, role: 'user', parts: [{ kind: 'text', text: 'ping' }] };
  return JSON.stringify({ jsonrpc: '2.0', id: i, method, params: { message } });
}

async function load(
  url: string,
  method: string,
  headers: Record<string, string>,
  check: (json: any) => boolean,
): Promise<{ rps: number; errors: number; p50: number; p99: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const u = new URL(url);
  let n = 0;
  let errors = 0;
  const lat: number[] = [];
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const b = body(method, i);
      const t0 = performance.now();
      const req = http.request(
        { host: u.hostname, port: u.port, path: '/', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(b), ...headers } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            try {
              if (!check(JSON.parse(Buffer.concat(chunks).toString()))) errors++;
            } catch {
              errors++;
            }
            lat.push(performance.now() - t0);
            resolve();
          });
        },
      );
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end(b);
    });
  const run = async (ms: number, count: boolean) => {
    const end = performance.now() + ms;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (performance.now() < end) {
          await one(n);
          if (count) n++;
        }
      }),
    );
  };
  await run(500, false); // warm-up
  n = 0;
  errors = 0;
  lat.length = 0;
  const t0 = performance.now();
  await run(SECONDS * 1000, true);
  const secs = (performance.now() - t0) / 1000;
  agent.destroy();
  lat.sort((a, b) => a - b);
  return { rps: n / secs, errors, p50: lat[Math.floor(lat.length * 0.5)] ?? 0, p99: lat[Math.floor(lat.length * 0.99)] ?? 0 };
}

async function main() {
  // Bare express JSON echo.
  const app = express();
  app.use(express.json());
  app.post('/', (req, res) => {
    res.json({ jsonrpc: '2.0', id: req.body.id, result: req.body.params });
  });
  const echo = http.createServer(app);
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  const echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/`;

  const a2a = await startA2AServer({
    card: { name: 'bench', version: '0.1.0', description: 'bench' },
    acceptance: 'queue',
    queueDepth: 100_000,
    executor: async (ctx) => ({ state: 'completed', text: ctx.text }),
  });

  const results: Record<string, number[]> = { echo: [], 'message/send (0.3)': [], 'SendMessage (1.0)': [] };
  let errors = 0;
  const lines: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const e = await load(echoUrl, 'message/send', {}, (j) => j.result !== undefined);
    const a = await load(a2a.url, 'message/send', {}, (j) => j.result?.status?.state === 'completed');
    const b = await load(a2a.url, 'SendMessage', { 'A2A-Version': '1.0' }, (j) => j.result?.task?.status?.state === 'TASK_STATE_COMPLETED');
    results['echo']!.push(e.rps);
    results['message/send (0.3)']!.push(a.rps);
    results['SendMessage (1.0)']!.push(b.rps);
    errors += e.errors + a.errors + b.errors;
    lines.push(
      `round ${round + 1}: echo ${e.rps.toFixed(0)} req/s (p50 ${e.p50.toFixed(2)} ms) | ` +
        `message/send ${a.rps.toFixed(0)} tasks/s (p50 ${a.p50.toFixed(2)} ms, p99 ${a.p99.toFixed(2)} ms) | ` +
        `SendMessage ${b.rps.toFixed(0)} tasks/s (p50 ${b.p50.toFixed(2)} ms)`,
    );
  }
  await a2a.close();

  // The same front door with the whole stack behind it: an agent session (the replay driver, a
  // real WASM component answering at once without a provider), one task at a time as a queue
  // capsule runs them. This is the figure a caller sees; the stub rows above isolate the server.
  const kit = await openReplay({ responses: [endTurn('ok')] });
  const full = await startA2AServer({
    card: { name: 'bench-agent', version: '0.1.0', description: 'bench' },
    acceptance: 'queue',
    queueDepth: 100_000,
    executor: taskExecutor(kit.session),
  });
  const warm = await load(full.url, 'message/send', {}, (j) => j.result?.status?.state === 'completed');
  void warm;
  const agentRun = await load(full.url, 'message/send', {}, (j) => j.result?.status?.state === 'completed');
  errors += agentRun.errors;
  await full.close();
  await kit.close();
  await new Promise<void>((r) => echo.close(() => r()));
  const best = (xs: number[]) => Math.max(...xs);
  const echoRps = best(results['echo']!);
  const r03 = best(results['message/send (0.3)']!);
  const r10 = best(results['SendMessage (1.0)']!);
  for (const l of lines) console.log(l);
  console.log(`node ${process.version}, ${SECONDS}s x ${ROUNDS} rounds, concurrency ${CONCURRENCY}, best round per target`);
  console.log(`bare express JSON echo:               ${echoRps.toFixed(0)} req/s`);
  console.log(`A2A message/send -> completed (0.3):  ${r03.toFixed(0)} tasks/s  = ${((100 * r03) / echoRps).toFixed(1)}% of echo`);
  console.log(`A2A SendMessage -> completed (1.0):   ${r10.toFixed(0)} tasks/s  = ${((100 * r10) / echoRps).toFixed(1)}% of echo`);
  console.log(`A2A message/send -> agent loop (replay driver, tasks in order): ${agentRun.rps.toFixed(0)} tasks/s (p50 ${agentRun.p50.toFixed(1)} ms under ${CONCURRENCY} concurrent callers) = ${((100 * agentRun.rps) / echoRps).toFixed(1)}% of echo`);
  console.log(`errors: ${errors}; target >= 50%: ${r03 / echoRps >= 0.5 && r10 / echoRps >= 0.5 ? 'met' : 'NOT met'}`);
  console.log(JSON.stringify({ echoRps: Math.round(echoRps), a2a03Rps: Math.round(r03), a2a10Rps: Math.round(r10), ratio03: +(r03 / echoRps).toFixed(3), ratio10: +(r10 / echoRps).toFixed(3), errors }));
}

await main();
// Keep-alive sockets and idle component workers must not hold the bench open.
process.exit(0);
