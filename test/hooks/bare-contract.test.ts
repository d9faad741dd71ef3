/**
 * A hook served as a bare `.wasm` (no murmur.yaml of its own) takes its contract from the capsule
 * entry (issue 12: a Hook CR with a bare component ran as an all-events `none` observer, silently).
 * Real parts: the hook-script component served over real HTTP on 127.0.0.1, staged through the
 * remote-artifact path, a real session with the Anthropic driver talking to the scripted provider.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../runtime/contracts/digest.ts';
import { openSession } from '../../runtime/compose/open.ts';
import type { CapsuleSession } from '../../runtime/loop/capsule-session.ts';
import { stageCapsule } from '../../runtime/session/stage.ts';
import { readTrace } from '../../runtime/trace/read.ts';
import { fixture } from '../fixtures/build.ts';
import { API_KEY, ECHO_TOOL, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider, type ScriptedProvider } from '../provider/scripted-provider.ts';

let server: http.Server;
let url = '';
let sha = '';
let registry = '';
beforeAll(async () => {
  const wasm = readFileSync(await fixture('hook-script'));
  sha = sha256Hex(wasm);
  server = http.createServer((req, res) => {
    if (req.url === '/guard.wasm') res.writeHead(200, { 'content-type': 'application/wasm' }).end(wasm);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/guard.wasm`;
  registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

let open: { session: CapsuleSession; provider: ScriptedProvider } | undefined;
afterEach(async () => {
  await open?.session.close('ok');
  await open?.provider.stop();
  open = undefined;
});

/** The guard denies every echo call at the decision point (if it is ever asked there). */
const SCRIPT = { 'on-tool-call:decision': { record: true, ret: { tag: 'deny', val: 'echo is not allowed here' } }, 'on-tool-call': { record: true } };

async function run(contract: string) {
  const provider = await startScriptedProvider({ turns: [{ toolCalls: [{ name: 'echo', input: { text: 'hi' } }] }, { text: 'done' }] });
  const capsuleDir = tmp('capsule-');
  writeFileSync(
    join(capsuleDir, 'murmur.yaml'),
    [
      'name: bare-hook',
      'version: 1.0.0',
      'artifacts:',
      '  - {name: driver-anthropic, version: 0.1.0, runtime: driver}',
      '  - {name: echo, version: 1.0.0, runtime: tool}',
      `  - {name: guard, runtime: hook, source: {url: "${url}", sha256: ${sha}}${contract}, config: ${JSON.stringify({ script: SCRIPT })}}`,
      'inference:',
      '  driver: {artifact: driver-anthropic}',
      '  model: claude-test',
    ].join('\n'),
  );
  const hostEnv = { PATH: process.env.PATH, MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY };
  const staged = await stageCapsule({ capsuleDir, registryDir: registry, workRoot: tmp('work-'), cacheDir: tmp('cache-') });
  const session = await openSession(staged, { hostEnv });
  open = { session, provider };
  const r = await session.runTask({ taskId: 't1', contextId: 'ctx-1', text: 'please echo hi', source: 'task_md' });
  const events = readTrace(staged.workdir.trace).events;
  return { r, events, bodies: provider.requests.map((q) => JSON.stringify(q.body)) };
}

describe('a bare .wasm hook with its contract in the capsule entry', () => {
  it('runs as a policy hook: the tool call is denied before it runs and the model reads the refusal', async () => {
    const { r, events, bodies } = await run(', binding: on-tool-call, commit_policy: deny');
    expect(r.exit).toBe('completed');
    expect(events.filter((e) => e.event_type === 'call_denied')).toEqual([
      expect.objectContaining({ hook: 'guard', reason: 'echo is not allowed here', tool_name: 'echo', kind: 'tool' }),
    ]);
    expect(events.filter((e) => e.event_type === 'tool_call')).toEqual([]);
    expect(bodies[1]).toContain("Refused by policy hook 'guard': echo is not allowed here");
  });

  it('without the contract the same component is an all-events observer, and the call runs', async () => {
    const { r, events } = await run('');
    expect(r.exit).toBe('completed');
    expect(events.filter((e) => e.event_type === 'call_denied')).toEqual([]);
    expect(events.filter((e) => e.event_type === 'tool_call')).toHaveLength(1);
  });
});
