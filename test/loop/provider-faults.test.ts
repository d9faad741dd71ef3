/**
 * Provider faults through the real driver components over real HTTP (the scripted provider cuts
 * streams, answers 429/5xx with Retry-After, resets connections): a cut stream is a failed call,
 * 429/5xx/resets are retried up to `max_attempts`, other 4xx are not, every attempt is on the
 * trace, and error bodies are cut to a bounded size.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readTrace } from '../../runtime/trace/read.ts';
import type { ScriptTurn } from '../provider/scripted-provider.ts';
import { ECHO_TOOL, capsuleYaml, driverDef, openKit, type Kit } from './kit.ts';

let kit: Kit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

function yaml(api: 'anthropic' | 'openai', config?: Record<string, unknown>): string {
  const y = capsuleYaml({ api });
  return config ? y.replace(`driver: {artifact: driver-${api}}`, `driver: {artifact: driver-${api}, config: ${JSON.stringify(config)}}`) : y;
}

async function run(api: 'anthropic' | 'openai', turns: ScriptTurn[], config?: Record<string, unknown>) {
  kit = await openKit({ api, yaml: yaml(api, config), artifacts: [driverDef(api), ECHO_TOOL], script: { turns } });
  const r = await kit.session.runTask({ taskId: 't1', contextId: 'c1', text: 'hello', source: 'task_md' });
  const ev = readTrace(kit.session.staged.workdir.trace).events;
  return {
    r,
    attempts: ev.filter((e) => e.event_type === 'inference_attempt'),
    inference: ev.filter((e) => e.event_type === 'inference'),
    requests: kit.provider.requests,
  };
}

// Small backoff base: the waits are the driver's decisions, recorded on the trace, never timed here.
const FAST = { retry_base_ms: 5 };

describe('provider faults', () => {
  for (const api of ['anthropic', 'openai'] as const) {
    it(`${api}: a stream cut before its final event is a failed call, never a completed partial answer`, async () => {
      const { r, requests } = await run(api, [{ text: 'a partial answer that never finishes', cutStream: true }]);
      expect(r.exit).toBe('failed');
      expect(r.reason).toMatch(/stream ended before/);
      expect(r.text).toBeUndefined();
      expect(requests).toHaveLength(1); // not retried: its chunks may already have gone out
    });

    it(`${api}: 429 with Retry-After, then 503, then an answer: retried, every attempt on the trace`, async () => {
      const { r, attempts, requests } = await run(
        api,
        [{ error: { status: 429, retryAfter: 0 } }, { error: { status: 503 } }, { text: 'third time lucky' }],
        FAST,
      );
      expect(r.exit).toBe('completed');
      expect(r.text).toBe('third time lucky');
      expect(requests.map((q) => q.status)).toEqual([429, 503, 200]);
      expect(attempts.map((a) => a.status)).toEqual([429, 503, 200]);
      expect(attempts[0]).toMatchObject({ attempt: 1, retry_after_ms: 0, delay_ms: 0 });
      // Backoff with jitter for the 503: within [½, 1] × base × 2^(2-1).
      expect(attempts[1]!.delay_ms as number).toBeGreaterThanOrEqual(5);
      expect(attempts[1]!.delay_ms as number).toBeLessThanOrEqual(10);
    });

    it(`${api}: Retry-After is honoured (its value is the wait before the next attempt)`, async () => {
      const { r, attempts } = await run(api, [{ error: { status: 429, retryAfter: 1 } }, { text: 'ok' }], FAST);
      expect(r.exit).toBe('completed');
      expect(attempts[0]).toMatchObject({ status: 429, retry_after_ms: 1000, delay_ms: 1000 });
    });

    it(`${api}: a connection reset is retried`, async () => {
      const { r, attempts, requests } = await run(api, [{ reset: true }, { text: 'after the reset' }], FAST);
      expect(r.exit).toBe('completed');
      expect(r.text).toBe('after the reset');
      expect(requests).toHaveLength(2);
      expect(attempts[0]!.status).toBeUndefined();
      expect(attempts[0]!.error).toMatch(/connection failed/);
    });

    it(`${api}: 5xx on every attempt fails after max_attempts (configurable), with the attempts on the trace`, async () => {
      const { r, attempts, requests } = await run(api, [{ error: { status: 500 } }, { error: { status: 502 } }, { error: { status: 500 } }], {
        ...FAST,
        max_attempts: 2,
      });
      expect(r.exit).toBe('failed');
      expect(r.reason).toMatch(/HTTP 502 after 2 attempt/);
      expect(requests).toHaveLength(2);
      expect(attempts.map((a) => a.status)).toEqual([500, 502]);
    });

    it(`${api}: the default is 3 attempts`, async () => {
      const { r, requests } = await run(
        api,
        Array.from({ length: 4 }, () => ({ error: { status: 529 } })),
        FAST,
      );
      expect(r.exit).toBe('failed');
      expect(requests).toHaveLength(3);
    });

    it(`${api}: other 4xx are not retried, and a huge error body is cut before the answer and the trace`, async () => {
      const huge = 'x'.repeat(200_000);
      const { r, requests, inference } = await run(api, [{ error: { status: 400, message: huge } }, { text: 'never asked' }], FAST);
      expect(r.exit).toBe('failed');
      expect(requests).toHaveLength(1);
      expect(r.reason).toMatch(/HTTP 400/);
      expect(r.reason!.length).toBeLessThan(2048);
      expect(r.reason).toMatch(/more characters cut/);
      expect(JSON.stringify(inference).length).toBeLessThan(4096);
    });
  }
});
