/**
 * Loading hooks: the contract (commit table) checked before any component is compiled, the six
 * required session exports, the optional ones, a missing on-stage logged while staging goes on.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MurError } from '../../runtime/errors.ts';
import { HookBus } from '../../runtime/hooks/bus.ts';
import { isMurErrorList } from '../../runtime/manifest/errors.ts';
import { loadArtifactManifest } from '../../runtime/manifest/artifact.ts';
import type { StagedHook } from '../../runtime/hooks/types.ts';
import { sha256Hex } from '../../runtime/host/index.ts';
import { newSessionId } from '../../runtime/session/id.ts';
import { harness, scriptHook, variantHook, SESSION_CTX, SESSION_END, TASK_END, TASK_START, TOOL_EV, TOOL_OUTCOME, type Harness } from './harness.ts';

const open: Harness[] = [];
afterAll(async () => {
  await Promise.all(open.map((h) => h.bus.close()));
});

const services = {
  runInference: async () => ({ text: '', modelUsed: '', inputTokens: 0n, outputTokens: 0n }),
  countTokens: () => 0,
  taskIo: () => undefined,
  conversation: () => [],
};

async function loadErr(hooks: StagedHook[]): Promise<MurError> {
  const dir = mkdtempSync(join(tmpdir(), 'hookload-'));
  const e = await HookBus.load({ hooks, workdir: dir, sessionId: newSessionId(), services }).then(
    async (b) => {
      await b.close();
      throw new Error('loaded');
    },
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(MurError);
  return e as MurError;
}

describe('required exports', () => {
  it('a component missing a required session handler fails to load, naming it', async () => {
    const e = await loadErr([await variantHook('hook-missing-export', 'half-done')]);
    expect(e.code).toBe('E-HOOK-002');
    expect(e.message).toBe("hook 'half-done': component is missing the required export 'on-inference'");
    expect(e.hint).toMatch(/on-session-start, on-inference, on-tool-call, on-shell, on-compaction, on-session-end/);
  });

  it('a missing on-stage is logged and staging goes on; on-task-start / on-task-end are optional and never dispatched', async () => {
    const h = await harness([
      await variantHook('hook-no-stage', 'lean'),
      await scriptHook(
        'stager',
        { 'on-stage': { ret: { tag: 'write-manifests', val: [{ binaryName: 'jq', content: 'name: jq\n' }] } } },
        { binding: 'on-stage', commitPolicy: 'write-manifests' },
      ),
    ]);
    open.push(h);
    expect(h.log('lean')).toMatch(/hook lean: component exports no 'on-stage' handler; it is never staged/);
    await h.bus.stage({ shellAllow: ['jq'] });
    expect(readFileSync(join(h.dir, 'tools', 'jq', 'murmur.yaml'), 'utf8')).toBe('name: jq\n');
    await h.bus.sessionStart(SESSION_CTX);
    expect(await h.bus.taskStart(TASK_START)).toEqual({ messages: [] });
    await h.bus.toolObserved({ ...TOOL_EV, outcome: TOOL_OUTCOME });
    expect(await h.bus.taskEnd(TASK_END)).toEqual({});
    await h.bus.sessionEnd(SESSION_END);
    expect(h.recs.map((r) => r.rec)).toEqual(['on-session-start', 'on-tool-call', 'on-session-end']);
    expect(h.events()).toEqual([]);
  });

  it('a hook bound to on-stage that lacks on-stage says so in its log', async () => {
    const h = await harness([await variantHook('hook-no-stage', 'lean', { binding: 'on-stage' })]);
    open.push(h);
    await h.bus.stage({ shellAllow: [] });
    expect(h.log('lean')).toMatch(/its binding is on-stage, so it does nothing/);
  });
});

describe('the hook contract, checked before any component is compiled', () => {
  it('the bus refuses a contract the commit table rejects (E-HOOK-001), before reading the component', async () => {
    const bad: StagedHook = { name: 'x', wasmPath: '/nonexistent.wasm', binding: 'on-stage', executionMode: 'blocking', commitPolicy: 'reopen-task' };
    const e = await loadErr([bad]);
    expect(e.code).toBe('E-HOOK-001');
    expect(e.message).toBe(
      "hook 'x': hook contract violation: commit_policy 'reopen-task' is not valid for binding 'on-stage'; binding 'on-stage' honors commit_policy 'write-manifests'",
    );
    expect((await loadErr([{ ...bad, binding: undefined, commitPolicy: 'deny' }])).message).toMatch(
      /commit_policy 'deny' requires an explicit binding of 'on-shell' or 'on-tool-call'/,
    );
    expect((await loadErr([{ ...bad, binding: 'on-stage', commitPolicy: 'none', executionMode: 'async' }])).message).toMatch(
      /execution_mode 'async' is not valid for binding 'on-stage'; binding 'on-stage' is always blocking/,
    );
    expect((await loadErr([{ ...bad, binding: 'on-compaction', commitPolicy: 'replace-context', executionMode: 'async' }])).message).toMatch(
      /execution_mode 'async' requires commit_policy 'none' \(declared 'replace-context'\)/,
    );
  });

  it('a hook artifact murmur.yaml with a bad pair fails to parse with the same message; a good one loads and runs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookman-'));
    const write = (body: string): string => {
      const d = mkdtempSync(join(dir, 'a-'));
      writeFileSync(join(d, 'murmur.yaml'), `name: guard\nversion: 1.0.0\nruntime: hook\ndescription: test\n${body}`);
      return d;
    };
    const cases: Array<[string, RegExp]> = [
      [
        'binding: on-stage\ncommit_policy: reopen-task\n',
        /commit_policy 'reopen-task' is not valid for binding 'on-stage'; binding 'on-stage' honors commit_policy 'write-manifests'/,
      ],
      ['binding: on-inference\ncommit_policy: seed-context\n', /binding 'on-inference' honors commit_policy 'none'/],
      ['commit_policy: deny\n', /commit_policy 'deny' requires an explicit binding of 'on-shell' or 'on-tool-call'/],
      ['binding: on-stage\nexecution_mode: async\n', /execution_mode 'async' is not valid for binding 'on-stage'/],
      ['binding: on-task-end\nexecution_mode: async\ncommit_policy: reopen-task\n', /execution_mode 'async' requires commit_policy 'none'/],
    ];
    for (const [body, re] of cases) {
      let err: unknown;
      try {
        loadArtifactManifest(write(body));
      } catch (e) {
        err = e;
      }
      expect(isMurErrorList(err), body).toBe(true);
      const inner = (err as { errors: MurError[] }).errors.find((x) => x.code === 'E-MAN-020');
      expect(inner?.message, body).toMatch(re);
      expect(inner?.message, body).toMatch(/^hook contract violation: /);
    }
    const good = loadArtifactManifest(write('binding: on-shell\ncommit_policy: deny\n'));
    const staged = await scriptHook(
      'guard',
      { 'on-shell:decision': { ret: { tag: 'deny', val: 'manifest-loaded policy' } } },
      { binding: good.hook!.binding!, executionMode: good.hook!.executionMode, commitPolicy: good.hook!.commitPolicy },
    );
    const h = await harness([staged]);
    open.push(h);
    expect(await h.bus.shellDecision({ turn: 1, binary: 'rm', command: '-rf /', argv: ['-rf', '/'] })).toMatchObject({
      allowed: false,
      reason: 'manifest-loaded policy',
    });
  });
});

describe('other load rules', () => {
  it('a pinned SHA-256 that does not match refuses the hook', async () => {
    const s = await scriptHook('pinned', {});
    const e = await loadErr([{ ...s, sha256: '0'.repeat(64) }]);
    expect(e.code).toBe('E-HOST-002');
    const ok = sha256Hex(readFileSync(s.wasmPath));
    const h = await harness([{ ...s, sha256: `sha256:${ok}` }]);
    open.push(h);
    expect(h.bus.hookNames).toEqual(['pinned']);
  });

  it('hook names must be usable as log file names and unique', async () => {
    const s = await scriptHook('ok', {});
    expect((await loadErr([{ ...s, name: '../escape' }])).code).toBe('E-HOOK-004');
    expect((await loadErr([s, { ...s }])).message).toMatch(/two hooks are named 'ok'/);
  });

  it('a component that is not a hook is refused naming the interface it lacks', async () => {
    const { fixture } = await import('../fixtures/build.ts');
    const e = await loadErr([{ name: 'tool', wasmPath: await fixture('echo-tool'), executionMode: 'blocking', commitPolicy: 'none' }]);
    expect(e.code).toBe('E-HOOK-003');
    expect(e.message).toMatch(/hook 'tool': component does not export murmur:hook\/lifecycle@0\.9\.0/);
  });

  it('a hook sees only the environment it was granted', async () => {
    process.env.HOOK_TEST_SECRET = 'leak';
    const h = await harness([await scriptHook('envy', { 'on-session-start': { record: true } }, { env: { GRANTED: 'yes' } })]);
    open.push(h);
    await h.bus.sessionStart(SESSION_CTX);
    expect(h.recs).toHaveLength(1);
    // The environment is what the test granted (HOOK_SCRIPT + GRANTED) and nothing from the host.
    expect(JSON.stringify(h.recs)).not.toContain('leak');
  });
});
