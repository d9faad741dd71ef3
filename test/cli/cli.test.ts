import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mur } from './mur.ts';
import { API_KEY, ECHO_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider } from '../provider/scripted-provider.ts';

describe('mur --help', () => {
  for (const cmd of [['help'], ['run', '--help'], ['serve', '--help'], ['trace', '--help'], ['sessions', '--help']]) {
    it(`mur ${cmd.join(' ')} explains itself`, async () => {
      const r = await mur(cmd);
      expect(r.code).toBe(0);
      expect(r.out).toMatch(/usage: mur/);
    });
  }

  it('an unknown flag is refused with the nearest valid one', async () => {
    const r = await mur(['run', 'x', '--tsak', 'hi']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/unknown flag --tsak \(did you mean --task\?\)/);
  });

  it('an unknown command lists the commands', async () => {
    const r = await mur(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/unknown command 'frobnicate'/);
  });
});

describe('mur run', () => {
  it('runs a capsule, prints one line per step and the result, exits 0; mur trace reads the session', async () => {
    const provider = await startScriptedProvider({ turns: [{ toolCalls: [{ name: 'echo', input: { text: 'x' } }] }, { text: 'all done' }] });
    try {
      const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
      const capsule = tmp('cli-caps-');
      writeFileSync(join(capsule, 'murmur.yaml'), capsuleYaml());
      writeFileSync(join(capsule, 'task.md'), 'echo x please');
      const work = tmp('cli-work-');
      const r = await mur(['run', capsule, '--registry', registry, '--work-root', work], {
        MURMUR_INFERENCE_ENDPOINT: provider.url,
        MURMUR_INFERENCE_API_KEY: API_KEY,
      });
      expect(r.code).toBe(0);
      expect(r.out).toMatch(/staged kit-capsule 1\.0\.0: 2 artifact\(s\), murmur\.lock created/);
      expect(r.out).toMatch(/turn 1: claude-test → tool echo/);
      expect(r.out).toMatch(/echo ✓/);
      expect(r.out).toMatch(/■ task ok after 2 turn\(s\)/);
      expect(r.out).toMatch(/\nall done\n/);
      expect(existsSync(join(capsule, 'murmur.lock'))).toBe(true);
      const traceFile = /trace: (\S+)/.exec(r.out)![1]!;
      const steps = await mur(['trace', 'steps', traceFile]);
      expect(steps.out).toMatch(/turn 1: tool_call echo/);
      const report = await mur(['trace', 'report', traceFile.replace(/\/trace\.jsonl$/, ''), '--json']);
      const parsed = JSON.parse(report.out) as { totals: { tool_calls: number; exit_status: string } };
      expect(parsed.totals).toMatchObject({ tool_calls: 1, exit_status: 'ok' });
    } finally {
      await provider.stop();
    }
  });

  it('a task that does not complete exits 1 and says why', async () => {
    const provider = await startScriptedProvider({ turns: [{ error: { status: 400, type: 'invalid_request_error', message: 'bad' } }] });
    try {
      const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
      const capsule = tmp('cli-caps-');
      writeFileSync(join(capsule, 'murmur.yaml'), capsuleYaml());
      const r = await mur(['run', capsule, '--task', 'x', '--registry', registry, '--work-root', tmp('w-')], {
        MURMUR_INFERENCE_ENDPOINT: provider.url,
        MURMUR_INFERENCE_API_KEY: API_KEY,
      });
      expect(r.code).toBe(1);
      // A failure goes to stderr, never stdout.
      expect(r.err).toMatch(/task failed: inference driver|task failed: driver reported an error/);
      expect(r.out).not.toMatch(/^task failed:/m);
    } finally {
      await provider.stop();
    }
  });

  it('a driver past its deadline fails on stderr naming capabilities.limits.deadline_seconds, with the fix and the code', async () => {
    const provider = await startScriptedProvider({ turns: [{ delayMs: 20_000, text: 'too late' }] });
    try {
      const registry = await makeRegistry([driverDef('anthropic'), ECHO_TOOL]);
      const capsule = tmp('cli-deadline-');
      writeFileSync(join(capsule, 'murmur.yaml'), capsuleYaml({ extra: 'capabilities:\n  limits:\n    deadline_seconds: 2' }));
      const r = await mur(['run', capsule, '--task', 'x', '--registry', registry, '--work-root', tmp('w-')], {
        MURMUR_INFERENCE_ENDPOINT: provider.url,
        MURMUR_INFERENCE_API_KEY: API_KEY,
      });
      expect(r.code).toBe(1);
      expect(r.err).toMatch(
        /task failed: inference driver failed: driver-anthropic: run\.run did not finish within its 2000 ms deadline \(capabilities\.limits\.deadline_seconds\)/,
      );
      expect(r.err).toMatch(/\[E-HOST-003\]\n {2}hint: raise capabilities\.limits\.deadline_seconds in murmur\.yaml/);
      expect(r.out).not.toMatch(/^task failed:/m);
    } finally {
      await provider.stop();
    }
  });

  it('a bad manifest is answered with file, line and field, and nothing is written', async () => {
    const capsule = tmp('cli-bad-');
    writeFileSync(join(capsule, 'murmur.yaml'), 'name: bad\nversion: 1.0.0\ninference:\n  modle: x\n');
    const work = tmp('cli-work-');
    const r = await mur(['run', capsule, '--task', 'x', '--registry', tmp('empty-reg-'), '--work-root', work]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/murmur\.yaml:4/);
    expect(r.err).toMatch(/did you mean 'model'/);
    expect(existsSync(join(capsule, 'murmur.lock'))).toBe(false);
    expect(readFileSync(join(capsule, 'murmur.yaml'), 'utf8')).toContain('modle');
  });
});
