/**
 * Interop with a client no one here wrote: the official Python A2A SDK (`a2a-sdk` 1.3.0 from
 * PyPI, installed into .cache/a2a-py by test/interop/build.sh on first use) drives `mur serve`
 * over JSON-RPC, HTTP+JSON and gRPC, authenticating with a bearer API key. A call without the key
 * is refused on each binding.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, ECHO_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider, type ScriptedProvider } from '../provider/scripted-provider.ts';
import { freePort, serve, type Served } from '../cli/serve-kit.ts';
import { A2A_PY_DIR, BUILD_TIMEOUT_MS, ensurePythonSdk } from '../support/build-on-use.ts';

const PYTHON = join(A2A_PY_DIR, 'bin', 'python');
const SCRIPT = fileURLToPath(new URL('./a2a_py_client.py', import.meta.url));
const A2A_KEY = `py-interop-${crypto.randomUUID()}`;

let served: Served;
let provider: ScriptedProvider;

// The SDK's venv, installed from PyPI on first use.
beforeAll(ensurePythonSdk, BUILD_TIMEOUT_MS);
beforeAll(async () => {
  provider = await startScriptedProvider({ turns: [{ text: 'answer one' }, { text: 'answer two' }, { text: 'answer three' }] });
  const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
  const capsule = tmp('py-interop-');
  writeFileSync(
    join(capsule, 'murmur.yaml'),
    capsuleYaml({ name: 'pyinterop', tools: [ECHO_TOOL.name], extra: 'lifecycle:\n  task_acceptance: queue\n  queue_depth: 4\n' }),
  );
  const keys = join(tmp('py-keys-'), 'keys.txt');
  writeFileSync(keys, `python-client:${A2A_KEY}\n`);
  served = await serve(capsule, {
    registry,
    workRoot: tmp('py-work-'),
    env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
    args: ['--api-keys', keys, '--grpc-port', String(await freePort())],
  });
}, 180_000);

afterAll(async () => {
  await served?.stop();
  await provider?.stop();
});

function py(binding: string, token: string): Promise<any> {
  return new Promise((resolve, reject) =>
    execFile(PYTHON, [SCRIPT, served.url, binding, token], { timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`python client (${binding}) failed: ${stderr || err.message}`));
      else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!));
    }),
  );
}

describe('official Python a2a-sdk against mur serve', () => {
  it('the start line lists all three bindings and the authentication', () => {
    expect(served.output()).toMatch(/A2A bindings: JSON-RPC http:\S+, HTTP\+JSON http:\S+\/rest, gRPC \S+:\d+; authentication: API keys of python-client/);
    expect(served.output()).not.toContain(A2A_KEY);
  });

  it.each(['JSONRPC', 'HTTP+JSON', 'GRPC'])('over %s: sends, completes, reads back; without the key it is refused', async (binding) => {
    const r = await py(binding, A2A_KEY);
    expect(r.binding).toBe(binding);
    expect(r.state).toBe('TASK_STATE_COMPLETED');
    expect(r.text).toMatch(/^answer (one|two|three)$/);
    expect(r.got).toBe('TASK_STATE_COMPLETED');
    expect(r.anonymous).toMatch(/^refused/);
  });
});
