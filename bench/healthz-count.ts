/**
 * `/healthz` latency while a 10 MiB base64 tool result is counted (issue: one such count froze a
 * pod's /healthz for about a minute). Includes: a real HTTP server on 127.0.0.1 answering /healthz
 * on the same event loop that counts, and a client polling it every 10 ms over keep-alive; no
 * agent loop or components. Arms, alternating per round:
 * - runtime: TokenCounter (the counting worker), as the loop counts;
 * - main thread: the same count-only encoder on the event loop (what counting on the loop costs).
 * Prints min / median / p99 / max of the /healthz round trips during each count.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildCl100kCounter } from '../runtime/inference/bpe-tables.ts';
import { chunkText } from '../runtime/inference/chunk.ts';
import { TokenCounter } from '../runtime/inference/tokens.ts';

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

export async function benchHealthzCount(rounds = Number(process.env.BENCH_ROUNDS ?? 1)): Promise<string> {
  const server = http.createServer((_req, res) => res.end('{"ok":true}'));
  // A loop blocked for seconds must not see its keep-alive socket closed under the poller.
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz`;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = () =>
    new Promise<void>((resolve, reject) => {
      http
        .get(url, { agent }, (res) => {
          res.resume();
          res.on('end', resolve);
        })
        .on('error', reject);
    });
  const worker = new TokenCounter({ memoEntries: 0 });
  await worker.ready();
  const local = buildCl100kCounter();
  const arms: Record<string, (t: string) => Promise<number>> = {
    runtime: (t) => worker.count(t),
    'main thread': async (t) => {
      let n = 0;
      for (const c of chunkText(t)) n += local.count(c);
      return n;
    },
  };
  const lines = ['healthz-count: /healthz round trip (ms) while 10 MiB of base64 is counted'];
  const lat: Record<string, number[]> = {};
  const secs: Record<string, number[]> = {};
  for (let r = 0; r < rounds; r++) {
    for (const [arm, count] of Object.entries(arms)) {
      const text = randomBytes(Math.ceil((10 * 1024 * 1024 * 3) / 4)).toString('base64');
      let counting = true;
      const samples: number[] = [];
      const poll = (async () => {
        while (counting) {
          const t = performance.now();
          await get().catch(() => undefined); // a reset socket still measures the stall
          samples.push(performance.now() - t);
          await new Promise((res) => setTimeout(res, 10));
        }
      })();
      const t0 = performance.now();
      await new Promise((res) => setTimeout(res, 0));
      await count(text);
      (secs[arm] ??= []).push((performance.now() - t0) / 1000);
      counting = false;
      await poll;
      (lat[arm] ??= []).push(...samples);
    }
  }
  for (const [arm, xs] of Object.entries(lat)) {
    lines.push(
      `  ${arm.padEnd(12)} n=${xs.length} min ${pct(xs, 0).toFixed(1)} / median ${pct(xs, 50).toFixed(1)} / p99 ${pct(xs, 99).toFixed(1)} / max ${Math.max(...xs).toFixed(1)} ms; count took ${secs[arm]!.map((s) => s.toFixed(1)).join(', ')} s`,
    );
  }
  await worker.close();
  agent.destroy();
  server.close();
  return lines.join('\n');
}
