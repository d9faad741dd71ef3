import { describe, expect, it } from 'vitest';
import { parseArtifactManifest } from '../../runtime/manifest/artifact.ts';
import { COMMIT_TABLE, HANDLERS, contractDisagreements, type Handler, type HookContract } from '../../runtime/contracts/commit-table.ts';
import { errorAt, errorsOf } from './helpers.ts';

const hook = (extra: string) => `name: guard\nversion: 1.0.0\nruntime: hook\ndescription: A hook.\n${extra}`;

describe('artifact manifest', () => {
  it('parses a tool manifest with defaults; schemas as YAML mapping or JSON string', () => {
    const m = parseArtifactManifest(
      `name: grep-tool
version: 0.3.0
input_schema:
  type: object
  properties:
    pattern: {type: string}
output_schema: '{"type": "object"}'
tags: [search, text]
`,
      'tools/grep/murmur.yaml',
    );
    expect(m).toEqual({
      name: 'grep-tool',
      version: '0.3.0',
      runtime: 'tool',
      description: '',
      tags: ['search', 'text'],
      inputSchema: { type: 'object', properties: { pattern: { type: 'string' } } },
      outputSchema: { type: 'object' },
      file: 'tools/grep/murmur.yaml',
    });
  });

  it('E-MAN-019 an input_schema string that is not a JSON object', () => {
    const l = errorsOf('name: t\nversion: 1.0.0\ninput_schema: "{nope"\noutput_schema: "[1]"\n', 'artifact');
    const e = errorAt(l, 'input_schema');
    expect(e.code).toBe('E-MAN-019');
    expect(e.message).toMatch(/^'input_schema' is not valid JSON: /);
    expect(e.location?.line).toBe(3);
    expect(errorAt(l, 'output_schema').message).toBe("'output_schema' must hold a JSON object");
  });

  it('E-MAN-005 unknown key in an artifact manifest suggests the nearest', () => {
    const e = errorAt(errorsOf(hook('commit_polcy: none\n'), 'artifact'), 'commit_polcy');
    expect(e.message).toBe("unknown key 'commit_polcy'; did you mean 'commit_policy'?");
    expect(e.location?.line).toBe(5);
  });

  it('E-MAN-015 hook contract fields on a non-hook', () => {
    const e = errorAt(errorsOf('name: t\nversion: 1.0.0\nruntime: tool\nbinding: on-shell\n', 'artifact'), 'binding');
    expect(e.code).toBe('E-MAN-015');
    expect(e.message).toBe("'binding' applies to hooks only; this artifact has runtime 'tool'");
    expect(e.location?.line).toBe(4);
  });

  it('E-MAN-004 unknown binding name suggests the nearest handler', () => {
    const e = errorAt(errorsOf(hook('binding: on-shel\n'), 'artifact'), 'binding');
    expect(e.code).toBe('E-MAN-004');
    expect(e.message).toContain("did you mean 'on-shell'?");
  });

  it('resolves the default contract: no binding = every session event except on-stage, blocking, none', () => {
    const m = parseArtifactManifest(hook(''), 'h.yaml');
    expect(m.hook).toEqual({ handlers: HANDLERS.filter((h) => h !== 'on-stage'), executionMode: 'blocking', commitPolicy: 'none' });
    expect(m.hook!.handlers).not.toContain('on-stage');
  });

  it('accepts, for every binding, none and the one policy the binding honors', () => {
    for (const b of HANDLERS) {
      for (const p of new Set(['none', COMMIT_TABLE[b].policy])) {
        const m = parseArtifactManifest(hook(`binding: ${b}\ncommit_policy: ${p}\n`), 'h.yaml');
        expect(m.hook).toEqual({ binding: b, handlers: [b], executionMode: 'blocking', commitPolicy: p });
      }
    }
  });
});

describe('hook contract violations (checkHookContract via real YAML)', () => {
  it('a policy the binding cannot honor names the binding, the declared policy and the honored one, at its line', () => {
    const l = errorsOf(
      hook('binding: on-task-end\nexecution_mode: blocking\ncommit_policy: replace-context\n'),
      'artifact',
      'registry/guard/1.0.0/murmur.yaml',
    );
    const e = errorAt(l, 'commit_policy');
    expect(e.code).toBe('E-MAN-020');
    expect(e.message).toBe(
      "hook contract violation: commit_policy 'replace-context' is not valid for binding 'on-task-end'; binding 'on-task-end' honors commit_policy 'reopen-task'",
    );
    expect(e.location).toEqual({ file: 'registry/guard/1.0.0/murmur.yaml', line: 7, column: 16, field: 'commit_policy' });
    expect(e.hint).toBe("set `commit_policy: reopen-task` or `none`, or bind the hook to 'on-compaction' which honors 'replace-context'");
  });

  it('every (binding, policy) pair outside the table is refused', () => {
    const policies = ['none', 'replace-context', 'write-manifests', 'reopen-task', 'seed-context', 'deny'];
    for (const b of HANDLERS as readonly Handler[]) {
      for (const p of policies) {
        if (p === 'none' || p === COMMIT_TABLE[b].policy) continue;
        const e = errorAt(errorsOf(hook(`binding: ${b}\ncommit_policy: ${p}\n`), 'artifact'), 'commit_policy');
        expect(e.message).toContain(`binding '${b}' honors commit_policy '${COMMIT_TABLE[b].policy}'`);
        expect(e.location?.line).toBe(6);
      }
    }
  });

  it("on-inference admits only 'none' (its artifact arm has no policy spelling)", () => {
    const e = errorAt(errorsOf(hook('binding: on-inference\ncommit_policy: seed-context\n'), 'artifact'), 'commit_policy');
    expect(e.message).toContain("binding 'on-inference' honors commit_policy 'none'");
  });

  it('async requires commit_policy none', () => {
    const e = errorAt(errorsOf(hook('binding: on-compaction\nexecution_mode: async\ncommit_policy: replace-context\n'), 'artifact'), 'execution_mode');
    expect(e.code).toBe('E-MAN-020');
    expect(e.message).toBe(
      "hook contract violation: execution_mode 'async' requires commit_policy 'none' (declared 'replace-context'); a hook that commits an arm must be blocking",
    );
    expect(e.location?.line).toBe(6);
    // Also with no binding.
    const u = errorAt(errorsOf(hook('execution_mode: async\ncommit_policy: reopen-task\n'), 'artifact'), 'execution_mode');
    expect(u.message).toContain("execution_mode 'async' requires commit_policy 'none'");
  });

  it('on-stage is never async', () => {
    const e = errorAt(errorsOf(hook('binding: on-stage\nexecution_mode: async\n'), 'artifact'), 'execution_mode');
    expect(e.message).toBe("hook contract violation: execution_mode 'async' is not valid for binding 'on-stage'; binding 'on-stage' is always blocking");
    expect(e.hint).toContain('always run blocking');
    expect(e.location?.line).toBe(6);
  });

  it('deny requires an explicit on-shell or on-tool-call binding', () => {
    const e = errorAt(errorsOf(hook('commit_policy: deny\n'), 'artifact'), 'commit_policy');
    expect(e.message).toBe(
      "hook contract violation: commit_policy 'deny' requires an explicit binding of 'on-shell' or 'on-tool-call'; a hook with no binding receives every event and cannot deny",
    );
    expect(e.hint).toContain('binding: on-shell');
    expect(e.location?.line).toBe(5);
    for (const b of ['on-shell', 'on-tool-call']) {
      expect(parseArtifactManifest(hook(`binding: ${b}\ncommit_policy: deny\n`), 'h.yaml').hook?.commitPolicy).toBe('deny');
    }
  });

  it('no binding accepts any policy except deny', () => {
    for (const p of ['none', 'replace-context', 'write-manifests', 'reopen-task', 'seed-context']) {
      expect(parseArtifactManifest(hook(`commit_policy: ${p}\n`), 'h.yaml').hook?.commitPolicy).toBe(p);
    }
  });

  it('async observers are fine', () => {
    expect(parseArtifactManifest(hook('binding: on-inference\nexecution_mode: async\n'), 'h.yaml').hook).toEqual({
      binding: 'on-inference',
      handlers: ['on-inference'],
      executionMode: 'async',
      commitPolicy: 'none',
    });
  });
});

describe('a capsule entry contract against the artifact own (contractDisagreements)', () => {
  // [entry declares, artifact own, disagreeing fields]
  const rows: [HookContract, HookContract, string[]][] = [
    [{}, { binding: 'on-shell', commit_policy: 'deny' }, []],
    [{ binding: 'on-shell', commit_policy: 'deny' }, { binding: 'on-shell', commit_policy: 'deny' }, []],
    [{ execution_mode: 'blocking', commit_policy: 'none' }, {}, []], // defaults applied on the artifact side
    [{ commit_policy: 'deny', binding: 'on-shell' }, { binding: 'on-shell' }, ['commit_policy']],
    [{ commit_policy: 'none' }, { binding: 'on-tool-call', commit_policy: 'deny' }, ['commit_policy']],
    [{ binding: 'on-shell' }, {}, ['binding']], // no binding = every event, not on-shell
    [{ binding: 'on-shell', execution_mode: 'async' }, { binding: 'on-tool-call' }, ['binding', 'execution_mode']],
  ];
  it.each(rows)('entry %j vs own %j → %j', (entry, own, fields) => {
    expect(contractDisagreements(entry, own).map((d) => d.field)).toEqual(fields);
  });
});
