import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { effectiveCapabilities, loadManifest, parseManifest } from '../../runtime/manifest/capsule.ts';
import { MurError } from '../../runtime/errors.ts';
import type { MurErrorList } from '../../runtime/manifest/errors.ts';
import { MINIMAL, errorAt, errorsOf } from './helpers.ts';

const AGENT = `name: demo
version: 1.0.0
artifacts:
  - name: drv
    version: 1.0.0
    runtime: driver
inference:
  driver:
    artifact: drv
  model: test-model
`;

describe('capsule manifest: defaults', () => {
  it('applies every default to a minimal script capsule', () => {
    const m = parseManifest(MINIMAL, 'murmur.yaml');
    expect(m).toEqual({
      name: 'demo',
      version: '1.0.0',
      artifacts: [],
      capabilities: {
        network: { allow: [] },
        filesystem: { scope: '.' },
        env: { allow: [] },
        limits: { memoryBytes: 512 * 1024 * 1024, deadlineSeconds: 600, hookDeadlineSeconds: 30 },
      },
      context: { seedBudget: 0.1, seedOverflowMargin: 0.1 },
      lifecycle: { taskAcceptance: 'single', queueDepth: 1, inputTimeoutSecs: 3600, conversation: 'stateless', maxTaskReopens: 1, delegationDeadlineSecs: 600 },
      observability: { otelHeaders: {} },
      trace: { includeToolOutput: false },
      kind: 'script',
      file: 'murmur.yaml',
    });
  });

  it('applies inference and artifact defaults to an agent capsule', () => {
    const m = parseManifest(AGENT, 'murmur.yaml');
    expect(m.kind).toBe('agent');
    expect(m.inference).toEqual({
      driver: { artifact: 'drv' },
      model: 'test-model',
      transport: 'http',
      maxTurns: 10,
      maxTokens: 8192,
      compaction: { threshold: 0.98, dumpSummaries: false },
    });
    expect(m.artifacts).toEqual([{ name: 'drv', version: '1.0.0', runtime: 'driver' }]);
  });

  it('defaults a hook entry to on_overflow drop and runtime to tool', () => {
    const m = parseManifest(`${MINIMAL}artifacts:\n  - name: h\n    version: "1"\n    runtime: hook\n  - name: t\n    version: "1"\n`);
    expect(m.artifacts[0]!.onOverflow).toBe('drop');
    expect(m.artifacts[1]).toEqual({ name: 't', version: '1', runtime: 'tool' });
  });

  it('parses a full manifest into camelCase, keeping opaque mappings verbatim', () => {
    const m = parseManifest(`name: full
version: 2.1
artifacts:
  - name: drv
    version: 1.0.0
    runtime: driver
    config: {some_key: 1, Other: [a]}
  - name: remote-tool
    source:
      url: https://example.com/t.wasm
      sha256: ${'a'.repeat(64)}
    capabilities:
      network:
        allow: ["https://api.example.com"]
      limits:
        memory_bytes: 64Mi
  - name: guard
    version: 0.1.0
    runtime: hook
    on_overflow: block
capabilities:
  network:
    allow: [api.example.com, "localhost:8080", "http://127.0.0.1:9000", "capsule://team/reviewer"]
  filesystem:
    scope: data
  shell:
    allow: [git, ls]
    strip_env: ["AWS_*", "*_TOKEN"]
  env:
    allow: [LOG_LEVEL]
  limits:
    memory_bytes: 1GiB
    deadline_seconds: 120
    hook_deadline_seconds: 5
inference:
  driver:
    artifact: drv
    config: {api_style: chat}
  model: gpt-x
  endpoint: https://api.example.com/v1
  max_turns: 3
  max_tokens: 100
  max_session_tokens: 5000
  system_prompt: Be brief.
  compaction:
    threshold: 0.5
    model: small
    system_prompt_file: prompts/compact.md
    dump_summaries: true
context:
  max_tokens: 1000
  seed_budget: 0.2
  seed_overflow_margin: 0.05
lifecycle:
  task_acceptance: queue
  queue_depth: 4
  input_timeout_secs: 30
  conversation: threaded
  max_task_reopens: 0
  delegation_deadline_secs: 60
observability:
  otel_endpoint: http://localhost:4318
  otel_headers: {X-Api-Key: abc, Retries: 3}
  metrics_port: 9464
trace:
  include_tool_output: true
`);
    expect(m.version).toBe('2.1');
    expect(m.artifacts[0]!.config).toEqual({ some_key: 1, Other: ['a'] });
    expect(m.artifacts[1]).toMatchObject({
      name: 'remote-tool',
      runtime: 'tool',
      source: { url: 'https://example.com/t.wasm', sha256: 'a'.repeat(64) },
      capabilities: { network: { allow: ['https://api.example.com'] }, limits: { memoryBytes: 64 * 1024 * 1024 } },
    });
    expect(m.artifacts[1]!.version).toBeUndefined();
    expect(m.artifacts[2]!.onOverflow).toBe('block');
    expect(m.capabilities).toEqual({
      network: { allow: ['api.example.com', 'localhost:8080', 'http://127.0.0.1:9000', 'capsule://team/reviewer'] },
      filesystem: { scope: 'data' },
      shell: { allow: ['git', 'ls'], stripEnv: ['AWS_*', '*_TOKEN'] },
      env: { allow: ['LOG_LEVEL'] },
      limits: { memoryBytes: 1024 ** 3, deadlineSeconds: 120, hookDeadlineSeconds: 5 },
    });
    expect(m.inference).toEqual({
      driver: { artifact: 'drv', config: { api_style: 'chat' } },
      model: 'gpt-x',
      endpoint: 'https://api.example.com/v1',
      transport: 'http',
      maxTurns: 3,
      maxTokens: 100,
      maxSessionTokens: 5000,
      systemPrompt: 'Be brief.',
      compaction: { threshold: 0.5, model: 'small', systemPromptFile: 'prompts/compact.md', dumpSummaries: true },
    });
    expect(m.context).toEqual({ maxTokens: 1000, seedBudget: 0.2, seedOverflowMargin: 0.05 });
    expect(m.lifecycle).toEqual({
      taskAcceptance: 'queue',
      queueDepth: 4,
      inputTimeoutSecs: 30,
      conversation: 'threaded',
      maxTaskReopens: 0,
      delegationDeadlineSecs: 60,
    });
    expect(m.observability).toEqual({ otelEndpoint: 'http://localhost:4318', otelHeaders: { 'X-Api-Key': 'abc', Retries: '3' }, metricsPort: 9464 });
    expect(m.trace).toEqual({ includeToolOutput: true });

    // Effective grants: tools inherit + narrow; hooks get nothing undeclared.
    const tool = effectiveCapabilities(m, 'remote-tool');
    expect(tool.network.allow).toEqual(['https://api.example.com']);
    expect(tool.filesystem.scope).toBe('data');
    expect(tool.limits.memoryBytes).toBe(64 * 1024 * 1024);
    const hook = effectiveCapabilities(m, 'guard');
    expect(hook.network.allow).toEqual([]);
    expect(hook.filesystem.scope).toBeNull();
    expect(hook.shell).toBeUndefined();
    expect(hook.limits.hookDeadlineSeconds).toBe(5);
  });

  it('treats an empty otel_endpoint as absent', () => {
    const m = parseManifest(`${MINIMAL}observability:\n  otel_endpoint: ""\n`);
    expect(m.observability.otelEndpoint).toBeUndefined();
  });
});

describe('capsule manifest: each error kind names file, line, column, field and a hint', () => {
  it('E-MAN-001 YAML syntax error, with line', () => {
    const l = errorsOf('name: demo\nversion: 1\nartifacts: [\n', 'capsule', 'caps/murmur.yaml');
    expect(l.code).toBe('E-MAN-000');
    expect(l.errors[0]!.code).toBe('E-MAN-001');
    expect(l.errors[0]!.message).toMatch(/^YAML syntax error: /);
    expect(l.errors[0]!.location?.file).toBe('caps/murmur.yaml');
    expect(l.errors[0]!.location?.line).toBeGreaterThanOrEqual(3);
  });

  it('E-MAN-001 duplicate key', () => {
    const l = errorsOf('name: demo\nversion: 1\nname: again\n');
    const e = l.errors[0]!;
    expect(e.code).toBe('E-MAN-001');
    expect(e.message).toBe("duplicate key 'name' in the manifest (first given at line 1)");
    expect(e.location?.field).toBe('name');
    expect(e.location?.line).toBe(3);
    expect(e.hint).toContain('each key may appear once');
  });

  it('E-MAN-023 empty manifest', () => {
    const e = errorsOf('# nothing\n').errors[0]!;
    expect(e.code).toBe('E-MAN-023');
    expect(e.message).toBe('the manifest is empty');
  });

  it('E-MAN-003 root is not a mapping', () => {
    const e = errorsOf('- a\n- b\n').errors[0]!;
    expect(e.code).toBe('E-MAN-003');
    expect(e.message).toBe('the manifest must be a mapping, found a list');
  });

  it('E-MAN-002 missing required fields (all of them at once)', () => {
    const l = errorsOf('artifacts: []\n');
    expect(l.codes()).toEqual(['E-MAN-002', 'E-MAN-002']);
    const n = errorAt(l, 'name');
    expect(n.message).toBe("missing required field 'name' in the manifest");
    expect(n.hint).toContain('add `name:`');
    errorAt(l, 'version');
  });

  it('E-MAN-002 missing required field inside a block, at the block line', () => {
    const l = errorsOf(`${MINIMAL}artifacts:\n  - name: d\n    version: "1"\n    runtime: driver\ninference:\n  driver:\n    artifact: d\n`);
    const e = errorAt(l, 'inference.model');
    expect(e.code).toBe('E-MAN-002');
    expect(e.message).toBe("missing required field 'model' in 'inference'");
    expect(e.location?.line).toBe(7);
    expect(e.hint).toContain('under `inference:`');
  });

  it('E-MAN-002 artifact version missing without source', () => {
    const l = errorsOf(`${MINIMAL}artifacts:\n  - name: t\n`);
    const e = errorAt(l, 'artifacts[0].version');
    expect(e.message).toBe("missing required field 'version' in artifact 't'");
    expect(e.location?.line).toBe(4);
  });

  it('E-MAN-002 empty required string', () => {
    const e = errorAt(errorsOf('name: ""\nversion: 1\n'), 'name');
    expect(e.code).toBe('E-MAN-002');
    expect(e.message).toBe("required field 'name' is empty");
  });

  it('E-MAN-003 wrong type, with quoting hint', () => {
    const l = errorsOf(`${MINIMAL}inference:\n  driver: {artifact: d}\n  model: 4\n  max_turns: many\n`);
    const model = errorAt(l, 'inference.model');
    expect(model.code).toBe('E-MAN-003');
    expect(model.message).toBe("'model' must be a string, found number 4");
    expect(model.hint).toBe('give a string (quote it: "4")');
    expect(model.location).toEqual({ file: 'murmur.yaml', line: 5, column: 10, field: 'inference.model' });
    const turns = errorAt(l, 'inference.max_turns');
    expect(turns.message).toBe("'max_turns' must be an integer, found the string 'many'");
    expect(turns.location?.line).toBe(6);
  });

  it('E-MAN-003 a key with no value', () => {
    const e = errorAt(errorsOf(`${MINIMAL}inference:\n  driver: {artifact: d}\n  model:\n`), 'inference.model');
    expect(e.message).toBe("'model' has no value");
  });

  it('E-MAN-004 enum value with did-you-mean', () => {
    const e = errorAt(errorsOf(`${MINIMAL}lifecycle:\n  task_acceptance: queu\n`), 'lifecycle.task_acceptance');
    expect(e.code).toBe('E-MAN-004');
    expect(e.message).toBe("'task_acceptance' must be one of 'none', 'single', 'queue', found 'queu'; did you mean 'queue'?");
    expect(e.hint).toBe("use 'queue'");
    expect(e.location?.line).toBe(4);
  });

  it("E-MAN-004 'wasm' runtime is refused", () => {
    const e = errorAt(errorsOf(`${MINIMAL}artifacts:\n  - name: t\n    version: "1"\n    runtime: native\n`), 'artifacts[0].runtime');
    expect(e.code).toBe('E-MAN-004');
    expect(e.hint).toContain('tool, driver, hook, skill');
  });

  it('E-MAN-005 unknown key with the nearest valid key', () => {
    const l = errorsOf(`${MINIMAL}capabilities:\n  netwrok:\n    allow: []\n`);
    const e = errorAt(l, 'capabilities.netwrok');
    expect(e.code).toBe('E-MAN-005');
    expect(e.message).toBe("unknown key 'netwrok'; did you mean 'network'?");
    expect(e.hint).toBe("rename 'netwrok' to 'network'");
    expect(e.location).toEqual({ file: 'murmur.yaml', line: 4, column: 3, field: 'capabilities.netwrok' });
  });

  it('E-MAN-005 a key in the wrong block names where it belongs', () => {
    const e = errorAt(errorsOf(`${MINIMAL}inference:\n  driver: {artifact: d}\n  model: m\n  seed_budget: 0.2\n`), 'inference.seed_budget');
    expect(e.message).toBe("unknown key 'seed_budget' here; did you mean 'context.seed_budget'?");
    expect(e.hint).toBe("move 'seed_budget' to 'context.seed_budget'");
    expect(e.location?.line).toBe(6);
  });

  it('E-MAN-005 an unrelated key lists the valid keys', () => {
    const e = errorAt(errorsOf(`${MINIMAL}trace:\n  zzzzzz: true\n`), 'trace.zzzzzz');
    expect(e.message).toBe("unknown key 'zzzzzz'");
    expect(e.hint).toBe('remove it; valid keys here are: include_tool_output');
  });

  it('E-MAN-006 out of range', () => {
    const l = errorsOf(
      `${MINIMAL}inference:\n  driver: {artifact: d}\n  model: m\n  max_turns: 0\n  compaction:\n    threshold: 1.5\ncontext:\n  seed_budget: -0.1\n`,
    );
    const t = errorAt(l, 'inference.max_turns');
    expect(t.code).toBe('E-MAN-006');
    expect(t.message).toBe("'max_turns' is 0, out of range (integer from 1 to 9007199254740991)");
    expect(t.location?.line).toBe(6);
    expect(errorAt(l, 'inference.compaction.threshold').message).toBe("'threshold' is 1.5, out of range (number in (0, 1])");
    expect(errorAt(l, 'context.seed_budget').location?.line).toBe(10);
  });

  it('E-MAN-007 invalid names', () => {
    const l = errorsOf('name: My_Capsule\nversion: "1 0"\n');
    expect(errorAt(l, 'name').message).toBe("invalid name 'My_Capsule'");
    expect(errorAt(l, 'version').message).toBe("invalid version '1 0'");
  });

  it('E-MAN-008 network.allow entries', () => {
    const l = errorsOf(
      `${MINIMAL}capabilities:\n  network:\n    allow:\n      - https://api.example.com/v1?key=1\n      - ftp://files.example.com\n      - "example.com:99999"\n      - "capsule://Bad"\n      - "exa mple.com"\n`,
    );
    const p = errorAt(l, 'capabilities.network.allow[0]');
    expect(p.code).toBe('E-MAN-008');
    // A path alone is accepted (the grant is the destination); a query is not.
    expect(p.message).toBe(
      "invalid network.allow entry 'https://api.example.com/v1?key=1': an entry names a host, not a URL path, query, fragment or credentials",
    );
    expect(p.hint).toBe("drop everything after the host and port: 'https://api.example.com'");
    expect(p.location?.line).toBe(6);
    expect(errorAt(l, 'capabilities.network.allow[1]').message).toContain("scheme 'ftp' is not allowed; only http and https");
    expect(errorAt(l, 'capabilities.network.allow[2]').message).toContain('port 99999 is out of range');
    expect(errorAt(l, 'capabilities.network.allow[3]').message).toContain('capsule://<namespace>/<name>');
    expect(errorAt(l, 'capabilities.network.allow[4]').location?.line).toBe(10);
  });

  it('E-MAN-008 a network.allow entry with port 0 is refused, as host:0 and as a URL', () => {
    const l = errorsOf(`${MINIMAL}capabilities:\n  network:\n    allow:\n      - "api.example.com:0"\n      - "https://api.example.com:0"\n`);
    for (const i of [0, 1]) {
      const p = errorAt(l, `capabilities.network.allow[${i}]`);
      expect(p.code).toBe('E-MAN-008');
      expect(p.message).toMatch(/port 0 is out of range/);
    }
  });

  it('accepts every documented network.allow form', () => {
    const m = parseManifest(
      `${MINIMAL}capabilities:\n  network:\n    allow: [example.com, "example.com:8443", "https://example.com", "http://127.0.0.1:8080", "https://example.com/", "[::1]:80", "capsule://ns/name"]\n`,
    );
    expect(m.capabilities.network.allow).toHaveLength(7);
  });

  it('E-MAN-009 filesystem.scope must be relative without ..', () => {
    const abs = errorAt(errorsOf(`${MINIMAL}capabilities:\n  filesystem:\n    scope: /etc\n`), 'capabilities.filesystem.scope');
    expect(abs.code).toBe('E-MAN-009');
    expect(abs.message).toBe("invalid filesystem.scope '/etc': it is absolute");
    expect(abs.location?.line).toBe(5);
    const up = errorAt(errorsOf(`${MINIMAL}capabilities:\n  filesystem:\n    scope: data/../../x\n`), 'capabilities.filesystem.scope');
    expect(up.message).toBe("invalid filesystem.scope 'data/../../x': it climbs out with '..'");
  });

  it('E-MAN-010 shell.allow present but empty, or not a bare name', () => {
    const empty = errorAt(errorsOf(`${MINIMAL}capabilities:\n  shell:\n    allow: []\n`), 'capabilities.shell.allow');
    expect(empty.code).toBe('E-MAN-010');
    expect(empty.message).toBe("'capabilities.shell.allow' is present but empty");
    expect(empty.location?.line).toBe(5);
    const nul = errorAt(errorsOf(`${MINIMAL}capabilities:\n  shell:\n    allow:\n`), 'capabilities.shell.allow');
    expect(nul.message).toBe("'capabilities.shell.allow' is present but empty");
    const missing = errorAt(errorsOf(`${MINIMAL}capabilities:\n  shell: {}\n`), 'capabilities.shell.allow');
    expect(missing.code).toBe('E-MAN-002');
    const pathy = errorAt(errorsOf(`${MINIMAL}capabilities:\n  shell:\n    allow: [/usr/bin/git]\n`), 'capabilities.shell.allow[0]');
    expect(pathy.message).toBe("invalid shell.allow entry '/usr/bin/git': give a bare binary name");
    expect(pathy.hint).toContain("'git'");
  });

  it('E-MAN-011 env names and strip_env globs', () => {
    const l = errorsOf(`${MINIMAL}capabilities:\n  shell:\n    allow: [ls]\n    strip_env: ["A-B"]\n  env:\n    allow: ["1BAD"]\n`);
    expect(errorAt(l, 'capabilities.shell.strip_env[0]').code).toBe('E-MAN-011');
    expect(errorAt(l, 'capabilities.env.allow[0]').message).toBe("invalid env.allow name '1BAD'");
  });

  it('E-MAN-012 system_prompt and system_prompt_file together', () => {
    const l = errorsOf(`${AGENT}  system_prompt: hi\n  system_prompt_file: p.md\n  compaction:\n    system_prompt: a\n    system_prompt_file: b.md\n`);
    const e = errorAt(l, 'inference.system_prompt_file');
    expect(e.code).toBe('E-MAN-012');
    expect(e.message).toBe("'inference' sets both system_prompt and system_prompt_file; they are mutually exclusive");
    expect(e.location?.line).toBe(12);
    expect(errorAt(l, 'inference.compaction.system_prompt_file').location?.line).toBe(15);
  });

  it('E-MAN-013 duplicate artifact names', () => {
    const e = errorAt(errorsOf(`${MINIMAL}artifacts:\n  - name: t\n    version: "1"\n  - name: t\n    version: "2"\n`), 'artifacts[1].name');
    expect(e.code).toBe('E-MAN-013');
    expect(e.message).toBe("duplicate artifact name 't' (first declared at artifacts[0], line 4)");
    expect(e.location?.line).toBe(6);
  });

  it('E-MAN-014 driver.artifact must name a declared driver', () => {
    const missing = errorAt(errorsOf(AGENT.replace('artifact: drv', 'artifact: nope')), 'inference.driver.artifact');
    expect(missing.code).toBe('E-MAN-014');
    expect(missing.message).toBe("inference.driver.artifact 'nope' is not declared in artifacts");
    expect(missing.hint).toContain('drv');
    expect(missing.location?.line).toBe(9);
    const notDriver = errorAt(errorsOf(AGENT.replace('runtime: driver', 'runtime: tool')), 'inference.driver.artifact');
    expect(notDriver.message).toBe("inference.driver.artifact 'drv' names an artifact with runtime 'tool', not 'driver'");
  });

  it('E-MAN-015 on_overflow on a non-hook, capabilities on a skill', () => {
    const l = errorsOf(
      `${MINIMAL}artifacts:\n  - name: t\n    version: "1"\n    on_overflow: block\n  - name: s\n    version: "1"\n    runtime: skill\n    capabilities: {}\n`,
    );
    const o = errorAt(l, 'artifacts[0].on_overflow');
    expect(o.code).toBe('E-MAN-015');
    expect(o.message).toBe("'on_overflow' applies to hooks only; artifact 't' has runtime 'tool'");
    expect(o.location?.line).toBe(6);
    expect(errorAt(l, 'artifacts[1].capabilities').message).toBe("skill 's' cannot carry capabilities; a skill runs no code");
  });

  it('a hook entry carries a contract (binding, execution_mode, commit_policy); on a non-hook it is E-MAN-015', () => {
    const m = parseManifest(`${MINIMAL}artifacts:\n  - name: g\n    version: "1"\n    runtime: hook\n    binding: on-shell\n    commit_policy: deny\n`);
    expect(m.artifacts[0]).toMatchObject({ binding: 'on-shell', commitPolicy: 'deny' });
    expect(m.artifacts[0]!.executionMode).toBeUndefined(); // as declared: the artifact's own manifest supplies the rest
    const l = errorsOf(`${MINIMAL}artifacts:\n  - name: t\n    version: "1"\n    binding: on-shell\n    execution_mode: async\n`);
    expect(errorAt(l, 'artifacts[0].binding').code).toBe('E-MAN-015');
    expect(errorAt(l, 'artifacts[0].binding').message).toBe("'binding' applies to hooks only; artifact 't' has runtime 'tool'");
    expect(errorAt(l, 'artifacts[0].execution_mode').location?.line).toBe(7);
  });

  it('E-MAN-020 a hook entry contract that breaks the commit table, at the entry field', () => {
    const l = errorsOf(
      `${MINIMAL}artifacts:\n  - name: g\n    version: "1"\n    runtime: hook\n    execution_mode: async\n    commit_policy: replace-context\n`,
    );
    const e = errorAt(l, 'artifacts[0].execution_mode');
    expect(e.code).toBe('E-MAN-020');
    expect(e.message).toBe(
      "hook contract violation in artifact 'g': execution_mode 'async' requires commit_policy 'none' (declared 'replace-context'); a hook that commits an arm must be blocking",
    );
    expect(e.hint).toBe('set `execution_mode: blocking`, or set `commit_policy: none` if the hook commits nothing');
    const d = errorAt(
      errorsOf(`${MINIMAL}artifacts:\n  - name: g\n    version: "1"\n    runtime: hook\n    commit_policy: deny\n`),
      'artifacts[0].commit_policy',
    );
    expect(d.message).toContain("commit_policy 'deny' requires an explicit binding of 'on-shell' or 'on-tool-call'");
  });

  it('E-MAN-016 a per-artifact grant may only narrow', () => {
    const l = errorsOf(`${MINIMAL}capabilities:
  network:
    allow: ["api.example.com", "https://secure.example.com"]
  filesystem:
    scope: data
  shell:
    allow: [git]
  limits:
    deadline_seconds: 60
artifacts:
  - name: t
    version: "1"
    capabilities:
      network:
        allow: ["api.example.com:443", "http://secure.example.com", evil.example.com]
      filesystem:
        scope: other
      shell:
        allow: [git, curl]
      env:
        allow: [HOME]
      limits:
        deadline_seconds: 61
`);
    expect(l.codes().every((c) => c === 'E-MAN-016')).toBe(true);
    expect(l.errors.map((e) => e.location?.field)).toEqual([
      'artifacts[0].capabilities.network.allow[1]',
      'artifacts[0].capabilities.network.allow[2]',
      'artifacts[0].capabilities.filesystem.scope',
      'artifacts[0].capabilities.shell.allow[1]',
      'artifacts[0].capabilities.env.allow[0]',
      'artifacts[0].capabilities.limits.deadline_seconds',
    ]);
    expect(l.errors[1]!.message).toBe("artifacts[0].capabilities widens the capsule grant: 'evil.example.com' is not covered by capabilities.network.allow");
    expect(l.errors[1]!.location?.line).toBe(17);
  });

  it('E-MAN-017 bad URLs', () => {
    const e = errorAt(errorsOf(`${AGENT}  endpoint: ftp://x\n`), 'inference.endpoint');
    expect(e.code).toBe('E-MAN-017');
    expect(e.message).toBe("invalid URL 'ftp://x': scheme 'ftp' is not http or https");
  });

  it('E-MAN-018 bad source sha256', () => {
    const e = errorAt(errorsOf(`${MINIMAL}artifacts:\n  - name: r\n    source: {url: "https://x.test/a.wasm", sha256: ABC}\n`), 'artifacts[0].source.sha256');
    expect(e.code).toBe('E-MAN-018');
    expect(e.hint).toContain('sha256sum');
  });

  it('collects every error of a bad manifest, sorted by line, in one MurErrorList', () => {
    const l = errorsOf(`name: Bad Name
version: 1
artifacts:
  - name: t
    runtim: tool
capabilities:
  shell:
    allow: []
lifecycle:
  conversation: threded
`);
    expect(l).toBeInstanceOf(MurError);
    expect(l.message).toBe('invalid capsule manifest murmur.yaml: 5 errors');
    expect(l.errors.map((e) => [e.code, e.location?.line])).toEqual([
      ['E-MAN-007', 1],
      ['E-MAN-002', 4],
      ['E-MAN-005', 5],
      ['E-MAN-010', 8],
      ['E-MAN-004', 10],
    ]);
    const text = l.format();
    expect(text).toContain("murmur.yaml:5: artifacts[0].runtim: unknown key 'runtim'; did you mean 'runtime'? [E-MAN-005]");
    expect(text).toContain("  hint: rename 'runtim' to 'runtime'");
  });
});

describe('loadManifest(dir)', () => {
  const dir = () => mkdtempSync(path.join(os.tmpdir(), 'mur-man-'));

  it('E-MAN-021 when murmur.yaml is missing', () => {
    const d = dir();
    try {
      loadManifest(d);
      expect.unreachable();
    } catch (e) {
      expect((e as MurError).code).toBe('E-MAN-021');
      expect((e as MurError).message).toContain(path.join(d, 'murmur.yaml'));
    }
  });

  it('E-MAN-022 when a named prompt file does not exist; ok when it does', () => {
    const d = dir();
    writeFileSync(path.join(d, 'murmur.yaml'), `${AGENT}  system_prompt_file: prompts/sys.md\n`);
    try {
      loadManifest(d);
      expect.unreachable();
    } catch (e) {
      const l = e as MurErrorList;
      expect(l.errors[0]!.code).toBe('E-MAN-022');
      expect(l.errors[0]!.message).toContain("system_prompt_file 'prompts/sys.md' does not exist");
      expect(l.errors[0]!.location).toMatchObject({ file: path.join(d, 'murmur.yaml'), line: 11, field: 'inference.system_prompt_file' });
    }
    mkdirSync(path.join(d, 'prompts'));
    writeFileSync(path.join(d, 'prompts/sys.md'), 'You are terse.');
    const m = loadManifest(d);
    expect(m.dir).toBe(d);
    expect(m.file).toBe(path.join(d, 'murmur.yaml'));
    expect(m.inference?.systemPromptFile).toBe('prompts/sys.md');
  });
});
