/**
 * Does telemetry slow the agent loop? Five identical capsule sessions (replay driver, echo tool, no
 * network for inference) run the same long task, interleaved round by round in one process:
 *
 *   none        not instrumented
 *   metrics     instrumentSession with tracing off (metrics only)
 *   live        tracing to an in-process OTLP/HTTP receiver (http/protobuf)
 *   dead        tracing to a closed port (every export fails with ECONNREFUSED)
 *   hanging     tracing to a collector that accepts and never answers in time (30 s delay)
 *
 * Per-turn wall time per round: min / median / max per arm and of the ratio to `none` paired round
 * by round (bench/paired.ts).
 * Absolute numbers vary machine to machine; the ratios are what count. Prints numbers, asserts
 * nothing. `npm run bench telemetry` or `node --import tsx bench/telemetry.ts`.
 */
import './tmp-root.ts'; // first: this bench's temp dirs go under one folder, removed at exit
import net from 'node:net';
import { pathToFileURL } from 'node:url';
import { fmtTime, machineLine, pairedRows, summarize } from './paired.ts';
import { ECHO_TOOL } from '../test/loop/kit.ts';
import { openReplay, toolCall, type ReplayKit } from '../test/loop/replay-kit.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../test/telemetry/otlp-receiver.ts';
import {
  attachMetrics,
  attachSpans,
  instrumentSession,
  RuntimeMetrics,
  setupTelemetry,
  startChatSpan,
  startToolSpan,
  TELEMETRY_OFF,
  type SessionTelemetry,
  type Telemetry,
} from '../runtime/telemetry/index.ts';
import { TraceWriter } from '../runtime/trace/writer.ts';
import { fmtMs, median, table, timeIt } from './stats.ts';

/**
 * The telemetry's own CPU cost per agent turn, without components: the events of one turn (chat
 * span + inference event, tool span + tool_call event) written through a TraceWriter to /dev/null.
 */
async function perTurnCost(endpoint: string, dead: string): Promise<[string, string, string?][]> {
  const turn = (w: TraceWriter, i: number): void => {
    startChatSpan(w, { model: 'm', turn: i });
    w.write('inference', {
      turn: i,
      input_tokens: 1200,
      output_tokens: 40,
      decision: 'tool_call',
      model: 'm',
      duration_ms: 3,
      stop_reason: 'tool_call',
      reported_usage: { input_tokens: 1100, output_tokens: 40, cached_tokens: 900 },
    });
    const t = startToolSpan(w, { name: 'echo', callId: `c${i}`, turn: i });
    w.write('tool_call', { turn: i, tool_name: 'echo', input: { text: 'x' }, input_bytes: 12, output_bytes: 30, duration_ms: 1, status: 'ok' });
    t.end({ status: 'ok', kind: 'wasm' });
  };
  const arms: [string, ((w: TraceWriter) => Telemetry | undefined) | undefined][] = [
    ['none', undefined],
    ['metrics', () => undefined],
    ['spans off + metrics', () => TELEMETRY_OFF],
    [
      'live',
      () => setupTelemetry({ serviceName: 'b', serviceVersion: '1', endpoint, current: false, env: {}, warn: () => {}, batch: { scheduledDelayMillis: 50 } }),
    ],
    [
      'dead',
      () =>
        setupTelemetry({ serviceName: 'b', serviceVersion: '1', endpoint: dead, current: false, env: {}, warn: () => {}, batch: { scheduledDelayMillis: 50 } }),
    ],
  ];
  const rows: [string, string, string?][] = [];
  let base = 0;
  for (const [name, make] of arms) {
    const w = new TraceWriter('/dev/null', 'bench');
    let tel: Telemetry | undefined;
    const off: (() => void)[] = [];
    if (make) {
      tel = make(w);
      off.push(attachMetrics(w, { capsule: 'b', provider: 'anthropic' }, new RuntimeMetrics()));
      if (tel) off.push(attachSpans(w, { capsule: 'b', version: '1', provider: 'anthropic', telemetry: tel }));
    }
    w.write('task_start', { task_id: 't', context_id: 'c', source: 'task_md' });
    let i = 0;
    // 200 turns per sample, so a sample's time is well above the timer's resolution.
    const xs = await timeIt(
      50,
      () => {
        for (let k = 0; k < 200; k++) turn(w, i++);
      },
      20,
    );
    w.write('task_end', { task_id: 't', exit_status: 'ok' });
    for (const f of off) f();
    await tel?.shutdown(500);
    const per = median(xs) / 200;
    if (name === 'none') base = per;
    rows.push([name, fmtMs(per), name === 'none' ? 'trace lines only' : `+${fmtMs(Math.max(0, per - base))} per turn`]);
  }
  return rows;
}

async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

interface Arm {
  name: string;
  kit: ReplayKit;
  tel?: Telemetry;
  instr?: SessionTelemetry;
  perTurn: number[];
}

export default async function benchTelemetry(turns = Number(process.env.BENCH_TURNS ?? 120), rounds = Number(process.env.BENCH_ROUNDS ?? 7)): Promise<string> {
  const live: OtlpReceiver = await startOtlpReceiver();
  const hanging: OtlpReceiver = await startOtlpReceiver();
  hanging.delayMs = 30_000;
  const dead = `http://127.0.0.1:${await closedPort()}`;
  const quiet = { warn: () => {}, env: {} as NodeJS.ProcessEnv };
  // Short batch delay so exports really happen during the runs (the default is 5 s).
  const batch = { scheduledDelayMillis: 50 };
  const specs: { name: string; tel?: () => Telemetry }[] = [
    { name: 'none' },
    { name: 'metrics', tel: () => TELEMETRY_OFF },
    { name: 'live', tel: () => setupTelemetry({ serviceName: 'bench', serviceVersion: '1', endpoint: live.url, batch, current: false, ...quiet }) },
    { name: 'dead', tel: () => setupTelemetry({ serviceName: 'bench', serviceVersion: '1', endpoint: dead, batch, current: false, ...quiet }) },
    {
      name: 'hanging',
      tel: () => setupTelemetry({ serviceName: 'bench', serviceVersion: '1', endpoint: hanging.url, batch, exportTimeoutMs: 10_000, current: false, ...quiet }),
    },
  ];
  const arms: Arm[] = [];
  for (const s of specs) {
    const kit = await openReplay({
      name: `bench-${s.name}`,
      tools: [ECHO_TOOL],
      responses: [toolCall('echo', { text: 'tick' }, 'same-id')],
      inferenceExtra: `  max_turns: ${turns}`,
    });
    const arm: Arm = { name: s.name, kit, perTurn: [] };
    if (s.tel) {
      arm.tel = s.tel();
      arm.instr = instrumentSession(kit.session, { telemetry: arm.tel });
    }
    // Warm the components (compile, first instantiation) before timing.
    await kit.session.runTask({ taskId: 'warm', contextId: 'w', text: 'warm', source: 'task_md' });
    arms.push(arm);
  }
  for (let round = 0; round < rounds; round++) {
    // Rotate the order each round so no arm always runs first.
    const order = arms.map((_, i) => arms[(i + round) % arms.length]!);
    for (const a of order) {
      const t0 = performance.now();
      const r = await a.kit.session.runTask({
        taskId: `r${round}`,
        contextId: `c${round}`,
        text: 'loop',
        source: 'task_md',
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      });
      a.perTurn.push((performance.now() - t0) / r.turns);
    }
  }
  // Each arm against `none` round by round (paired ratio), min / median / max of both.
  const rows = pairedRows(
    summarize(
      arms.map((a) => a.name),
      arms.map((a) => a.perTurn),
    ),
    fmtTime,
  );
  const spansPerRound = turns * 2 + 1; // chat + execute_tool per turn, plus invoke_agent
  const out = [
    `telemetry overhead (${turns} turns × ${rounds} rounds per arm, interleaved; ~${spansPerRound} spans per task)`,
    table([['arm', 'per turn: median (min – max)'], ...rows]),
    machineLine(),
    `  live receiver got ${live.spans.length === 0 ? `${live.requests.length} protobuf request(s)` : `${live.spans.length} spans`}; hanging collector got ${hanging.requests.length} request(s) (none answered)`,
  ];
  out.push(
    '',
    'telemetry CPU per turn, no components (2 trace events, a chat and a tool span per turn)',
    table([['arm', 'per turn (median)'], ...(await perTurnCost(live.url, dead))]),
  );
  const t0 = performance.now();
  await Promise.all(
    arms.map(async (a) => {
      await a.kit.close();
      await a.instr?.shutdown(1000);
      await a.tel?.shutdown(1000);
    }),
  );
  out.push(`  close + bounded telemetry shutdown of all arms (1 s bound): ${fmtMs(performance.now() - t0)}`);
  await live.close();
  await hanging.close();
  return out.join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(await benchTelemetry());
  process.exit(0);
}
