/**
 * `mur serve` run directly on a machine (not the image): the shell tool cannot read the provider
 * key from the runtime's /proc/<pid>/environ (issue 38 §2). The scripted provider asks for
 * `sh -c 'cat /proc/$PPID/environ …'` (the shell's parent is the runtime), and the tool's output,
 * as the provider receives it in the next request, must not hold the key. Run as root (CI), root
 * may read any process's environ: what is read there shows the key's bytes overwritten
 * (runtime/native/guard.c), not merely refused. Plus the addon's scrub on a process's own
 * /proc/self/cmdline and environ.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sendMessage } from '../../runtime/a2a/peers/client.ts';
import { addonPath, nativeAddon } from '../../runtime/native-addon.ts';
import { capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider } from '../provider/scripted-provider.ts';
import { serve } from '../cli/serve-kit.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

describe('the runtime’s start-up environment', () => {
  it('has the native addon with its process guard built (scripts/build-native.ts, run by npm test)', () => {
    const a = nativeAddon();
    if (!a?.scrub || !a.nonDumpable) {
      throw new Error(
        `runtime/native/memory.node is ${addonPath() ? (a ? 'built without guard.c (rebuild it)' : 'there but does not load') : 'not built'}: run node --import tsx scripts/build-native.ts (needs a C compiler and Node's headers); without it the key stays in /proc/<pid>/environ`,
      );
    }
  });

  it('the addon overwrites a value in the process’s own /proc/self/cmdline and environ', () => {
    const secret = `s3cr3t-${crypto.randomUUID()}`;
    const script = [
      `const a = require(${JSON.stringify(addonPath())});`,
      "const before = require('fs').readFileSync('/proc/self/environ', 'latin1').includes(process.env.PROBE);",
      // Copied off the block first, as the runtime does: getenv reads the same bytes.
      'const probe = process.env.PROBE; process.env.PROBE = probe;',
      'const n = a.scrub([probe]);',
      "const fs = require('fs');",
      "console.log(JSON.stringify({ before, n, environ: fs.readFileSync('/proc/self/environ', 'latin1'), cmdline: fs.readFileSync('/proc/self/cmdline', 'latin1'), env: process.env.PROBE === probe }));",
    ].join('\n');
    const r = spawnSync(process.execPath, ['-e', script, '--', secret], { env: { PROBE: secret }, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const o = JSON.parse(r.stdout) as { before: boolean; n: number; environ: string; cmdline: string; env: boolean };
    expect(o.before).toBe(true);
    expect(o.n).toBe(2);
    expect(o.environ).not.toContain(secret);
    expect(o.environ).toContain(`PROBE=${'*'.repeat(secret.length)}`);
    expect(o.cmdline).not.toContain(secret);
    expect(o.env).toBe(true);
  });

  it('mur serve: the shell tool’s `cat /proc/<runtime pid>/environ` (and every other /proc/*/environ) does not show the provider key', async () => {
    const key = `sk-ant-api03-${crypto.randomUUID()}`;
    const command = 'cat /proc/$PPID/environ; echo; for f in /proc/[0-9]*/environ; do echo "== $f"; cat "$f"; done 2>&1; true';
    const provider = await startScriptedProvider({ turns: [{ toolCalls: [{ name: 'sh', input: { command } }] }, { text: 'read it' }] });
    cleanup.push(() => provider.stop());
    const registry = await makeRegistry([driverDef('anthropic')]);
    const capsule = tmp('environ-capsule-');
    writeFileSync(join(capsule, 'murmur.yaml'), capsuleYaml({ name: 'reader', tools: [], shell: ['sh', 'cat'] }));
    const served = await serve(capsule, {
      registry,
      workRoot: tmp('environ-work-'),
      env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: key },
    });
    cleanup.push(() => served.stop());

    const done = await sendMessage({ peerUrl: served.url, text: 'read the environment', allow: [served.url], wait: true });
    expect(done.ok && done.state).toBe('completed');
    // The tool's output as it went back to the provider: nothing on the way redacts it.
    const result = JSON.stringify(provider.requests[1]!.body);
    expect(result).toContain('PATH=');
    expect(result).not.toContain(key);
    if (process.getuid?.() === 0) {
      // Root reads any environ: the key's bytes are there, overwritten.
      expect(result).toContain(`MURMUR_INFERENCE_API_KEY=${'*'.repeat(key.length)}`);
    }
  });
});
