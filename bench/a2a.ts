/**
 * A2A throughput in tasks per second, four arms alternating round by round (bench/paired.ts): a bare
 * express JSON-RPC echo (the baseline), `message/send` and `SendMessage` → completed with a stub
 * executor (an instant answer: the server alone, no components), and `message/send` through the
 * agent loop with the real replay-driver component (no provider, no hooks). Target: the stub arms
 * ≥ 50% of the echo, by the median of the paired ratio.
 *
 *   node --import tsx bench/a2a.ts [--seconds 2] [--rounds 5] [--concurrency 32]
 *
 * Prints min / median / max per arm and per paired ratio; a JSON summary on the last line.
 */
import './tmp-root.ts'; // first: this bench's temp dirs go under one folder, removed at exit
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { taskExecutor } from '../runtime/compose/a2a-bridge.ts';
import { endTurn, openReplay } from '../test/loop/replay-kit.ts';
import express from 'express';
import { startA2AServer } from '../runtime/a2a/server/server.ts';
import { fmtRate, machineLine, paired, pairedRows, table, type Arm, numArg } from './paired.ts';

const SECONDS = numArg('seconds', 2);
const CONCURRENCY = numArg('concurrency', 32);
const ROUNDS = numArg('rounds', 5);

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
  // biome-ignore lint/suspicious/noExplicitAny: the JSON-RPC response as parsed; each check reads the fields it expects
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
        {
          host: u.hostname,
          port: u.port,
          path: '/',
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(b), ...headers },
        },
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

  // The same front door with the whole stack behind it: an agent session (the replay driver, a
  // real WASM component answering at once without a provider), tasks in order as a queue capsule
  // runs them. This is the figure a caller sees; the stub arms isolate the server.
  const kit = await openReplay({ responses: [endTurn('ok')] });
  const full = await startA2AServer({
    card: { name: 'bench-agent', version: '0.1.0', description: 'bench' },
    acceptance: 'queue',
    queueDepth: 100_000,
    executor: taskExecutor(kit.session),
  });
  await load(full.url, 'message/send', {}, (j) => j.result?.status?.state === 'completed'); // warm the components

  let errors = 0;
  // biome-ignore lint/suspicious/noExplicitAny: the JSON-RPC response as parsed; each check reads the fields it expects
  const arm = (name: string, url: string, method: string, headers: Record<string, string>, check: (j: any) => boolean): Arm => ({
    name,
    run: async () => {
      const r = await load(url, method, headers, check);
      errors += r.errors;
      return r.rps;
    },
  });
  // Every arm runs once per round, alternating; ratios are paired round by round against the echo.
  const res = await paired(
    [
      arm('bare express JSON echo (req/s)', echoUrl, 'message/send', {}, (j) => j.result !== undefined),
      arm('A2A message/send → completed, stub executor (0.3)', a2a.url, 'message/send', {}, (j) => j.result?.status?.state === 'completed'),
      arm(
        'A2A SendMessage → completed, stub executor (1.0)',
        a2a.url,
        'SendMessage',
        { 'A2A-Version': '1.0' },
        (j) => j.result?.task?.status?.state === 'TASK_STATE_COMPLETED',
      ),
      arm('A2A message/send → agent loop, replay driver component', full.url, 'message/send', {}, (j) => j.result?.status?.state === 'completed'),
    ],
    ROUNDS,
  );
  await a2a.close();
  await full.close();
  await kit.close();
  await new Promise<void>((r) => echo.close(() => r()));
  const ratio = (i: number) => res.ratios[i]!.spread;
  console.log(
    `A2A throughput (tasks/s; ${SECONDS} s per arm per round, ${ROUNDS} rounds, concurrency ${CONCURRENCY}; stub executor = instant answer, no components; agent loop = real replay-driver component, no hooks, no provider)`,
  );
  console.log(table(pairedRows(res, fmtRate('/s'))));
  console.log(machineLine());
  console.log(
    `errors: ${errors}; target (stub arms ≥ 50% of the echo, median paired ratio): ${ratio(0).median >= 0.5 && ratio(1).median >= 0.5 ? 'met' : 'NOT met'}`,
  );
  console.log(
    JSON.stringify({
      echoRps: Math.round(res.arms[0]!.spread.median),
      ratio03: +ratio(0).median.toFixed(3),
      ratio10: +ratio(1).median.toFixed(3),
      ratioAgent: +ratio(2).median.toFixed(3),
      errors,
    }),
  );
}

await main();
// Keep-alive sockets and idle component workers must not hold the bench open.
process.exit(0);
