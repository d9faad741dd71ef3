/**
 * Capsules served over real A2A servers, each session instrumented with its own tracer provider
 * (service name = the capsule) exporting to one in-process OTLP receiver. Everything made through
 * it is closed after each test.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { createAuthenticator } from '../../runtime/a2a/server/auth.ts';
import type { TaskExecutor } from '../../runtime/a2a/core/executor.ts';
import { startA2AServer, type A2AServer } from '../../runtime/a2a/server/server.ts';
import { instrumentSession, setupTelemetry, type InstrumentableSession, type SessionTelemetry, type Telemetry } from '../../runtime/telemetry/index.ts';
import type { Kit } from '../loop/kit.ts';
import { startOtlpReceiver, type OtlpReceiver } from './otlp-receiver.ts';

export interface TracedServing {
  /** The receiver every served capsule exports to (started on first use). */
  receiver(): Promise<OtlpReceiver>;
  /** Closes the kit after the test. */
  track(kit: Kit): Kit;
  /** Instruments `session` (service `name`) and serves it over A2A with `executor`, queue acceptance. */
  serve(session: InstrumentableSession, name: string, executor: TaskExecutor): Promise<A2AServer>;
  /** Ends the instrumentation and flushes every provider. */
  flush(): Promise<void>;
  /**
   * The key the served capsules know each other by (a trusted peer's): tests send it as their
   * bearer, and each capsule finds it as its credential for 127.0.0.1 peers (credentials.ts).
   */
  bearer: string;
}

export function useTracedServing(): TracedServing {
  const kits: Kit[] = [];
  const servers: A2AServer[] = [];
  const tels: Telemetry[] = [];
  const instr: SessionTelemetry[] = [];
  let rx: OtlpReceiver | undefined;

  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
    await Promise.all(kits.splice(0).map((k) => k.close().catch(() => {})));
    await Promise.all(instr.splice(0).map((t) => t.shutdown()));
    await Promise.all(tels.splice(0).map((t) => t.shutdown()));
    await rx?.close();
    rx = undefined;
  });

  const bearer = `mesh-${crypto.randomUUID()}`;
  const auth = createAuthenticator({ anonymous: true, apiKeys: [{ name: 'mesh', key: bearer }], trustedCallers: ['apikey:mesh'] });
  const saved = process.env.MURMUR_A2A_PEER_TOKENS_DIR;
  beforeAll(() => {
    const dir = mkdtempSync(join(tmpdir(), 'peer-tokens-'));
    writeFileSync(join(dir, '127.0.0.1'), bearer);
    process.env.MURMUR_A2A_PEER_TOKENS_DIR = dir;
  });
  afterAll(() => {
    if (saved === undefined) delete process.env.MURMUR_A2A_PEER_TOKENS_DIR;
    else process.env.MURMUR_A2A_PEER_TOKENS_DIR = saved;
  });

  const receiver = async (): Promise<OtlpReceiver> => (rx ??= await startOtlpReceiver());
  return {
    bearer,
    receiver,
    track(kit) {
      kits.push(kit);
      return kit;
    },
    async serve(session, name, executor) {
      const tel = setupTelemetry({
        serviceName: name,
        serviceVersion: '1.0.0',
        endpoint: (await receiver()).url,
        protocol: 'http/json',
        env: {},
        batch: { scheduledDelayMillis: 20 },
        current: false,
      });
      tels.push(tel);
      instr.push(instrumentSession(session, { telemetry: tel }));
      const s = await startA2AServer({
        card: { name, version: '1.0.0', description: name, skills: [{ id: 'work', description: 'work' }] },
        executor,
        acceptance: 'queue',
        queueDepth: 4,
        auth,
      });
      servers.push(s);
      return s;
    },
    async flush() {
      await Promise.all(instr.map((t) => t.shutdown()));
      await Promise.all(tels.map((t) => t.flush()));
    },
  };
}
