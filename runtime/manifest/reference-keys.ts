/**
 * Capsule-manifest keys of the reference runtime (Murmur) that this runtime refuses, each with why
 * and what to write instead (E-MAN-026). The validator consults this table before calling a key
 * unknown (E-MAN-005), and docs/manifest.md lists it (`npm run gen:docs`). The reference keys this
 * runtime accepts are ordinary rows of the schema (schema.ts), with the reference's meaning where
 * it applies here; values they cannot honour are refused by those rows' checks (E-MAN-026 too).
 * Keys are schema paths (`[]` = every list item).
 */
import type { Problem } from './checks.ts';

export interface ReferenceKey {
  path: string;
  /** Why it is not read here. */
  why: string;
  /** What to write instead (the hint). */
  instead: string;
}

/** Capability keys that are refused both capsule-wide and on an artifact entry. */
const CAPABILITY_KEYS: readonly (Omit<ReferenceKey, 'path'> & { key: string })[] = [
  {
    key: 'shell.baseline_env',
    why: 'a shell subprocess here gets the host environment minus credential-shaped names and `strip_env`; there is no baseline to add back',
    instead: 'remove it; list extra names to drop in `capabilities.shell.strip_env`',
  },
  {
    key: 'shell.interpreter_runtime',
    why: 'this runtime applies no Landlock path grants to shell subprocesses',
    instead: 'remove it; the interpreter runs as any binary in `capabilities.shell.allow`',
  },
  {
    key: 'shell.staged_runtime',
    why: 'this runtime has no sealed containment to stage a runtime into',
    instead: 'remove it; name the binary in `capabilities.shell.allow` and install it on the host (or in the image)',
  },
  {
    key: 'spawn',
    why: 'a capsule does not spawn capsules here',
    instead:
      'call another capsule over A2A: the `delegate-task` tool (or `message/send`) to a URL in `capabilities.network.allow` (`capsule://<namespace>/<name>` in a cluster)',
  },
  {
    key: 'limits.table_elements',
    why: 'the component host (V8, through jco) has no per-instance table limit to set',
    instead: 'remove it; `limits.memory_bytes` and `limits.deadline_seconds` are enforced',
  },
  {
    key: 'limits.instances',
    why: 'the component host has no per-instance count limit to set',
    instead: 'remove it; `limits.memory_bytes` and `limits.deadline_seconds` are enforced',
  },
  {
    key: 'resources',
    why: '`mur` sets no process rlimits or cgroups',
    instead: "remove it; in a cluster set the Capsule's `spec.resources` (the pod's requests and limits)",
  },
];

export const CAPSULE_REFERENCE_KEYS: readonly ReferenceKey[] = [
  {
    path: 'network',
    why: 'the A2A listener is configured on the command line, not in the manifest',
    instead:
      "remove it; give the port as `mur serve --a2a-port <port>` (in a cluster the Capsule's `spec.servicePort`) and A2A authentication with `mur serve` flags (docs/a2a.md)",
  },
  {
    path: 'gateway',
    why: 'there is no credential gateway here',
    instead: "write the provider in `inference.endpoint` and its key in `inference.api_key` (`${VAR}`) or the runtime's `MURMUR_INFERENCE_API_KEY`",
  },
  {
    path: 'artifacts[].local_source',
    why: 'an artifact is staged from a registry, a URL or an OCI registry, not from a folder named in the manifest',
    instead:
      "publish the folder into the capsule's registry (`mur publish <folder> --registry <capsule>/registry`, or `mur pack` + `mur install`) and give `version:`; or serve its .wasm at `source: {url, sha256}`",
  },
  ...CAPABILITY_KEYS.flatMap(({ key, ...r }) => [
    { path: `capabilities.${key}`, ...r },
    { path: `artifacts[].capabilities.${key}`, ...r },
  ]),
  {
    path: 'exports',
    why: 'files and tasks are not exported to peers by the manifest here; who may call this capsule is set by A2A authentication',
    instead:
      "remove it; choose callers with `mur serve` authentication flags (in a cluster the Capsule's `spec.a2a.auth`, docs/a2a.md); peers fetch results with A2A `tasks/get`",
  },
  {
    path: 'control',
    why: 'there is no control channel (`mur control`) here',
    instead: 'remove it; cancel a task with A2A `tasks/cancel` and stop `mur serve` with SIGTERM (it drains)',
  },
  { path: 'spend', why: 'there is no machine-wide daily token ledger here', instead: 'remove it; bound a session with `inference.max_session_tokens`' },
  {
    path: 'context.retain',
    why: 'the conversation record is kept in the task store, bounded by size, with no retention rule',
    instead: 'remove it; the record keeps at most 16 MiB (the oldest messages go first); remove old sessions with `mur sessions prune`',
  },
  {
    path: 'observability.eval',
    why: 'this runtime writes no eval.jsonl and runs no scorers',
    instead: 'remove it; score sessions from `trace.jsonl` (`mur trace`)',
  },
  {
    path: 'inference.command',
    why: 'the process transport (a Claude Code / Codex subprocess) does not exist here',
    instead: 'remove it and name a driver: `inference: {driver: {artifact: <driver>}, model: <model>, endpoint: <url>}`',
  },
  {
    path: 'inference.system_prompt_artifact',
    why: "a skill's text is staged (tools/<name>/skill.md) but never placed in the prompt here",
    instead: 'put the text in a file of the capsule folder and name it in `inference.system_prompt_file`',
  },
  {
    path: 'lifecycle.shell_grace_secs',
    why: 'a long shell command is not moved to the background here; it runs until it ends or hits its deadline',
    instead: 'remove it; `capabilities.limits.deadline_seconds` bounds a shell command',
  },
  {
    path: 'trace.capture',
    why: 'trace.jsonl always records event metadata; content blobs are not written',
    instead: 'remove it; `trace.include_tool_output: true` records tool output on `tool_call` events',
  },
  {
    path: 'trace.retain',
    why: 'trace.jsonl is kept with its session workdir; no retention is applied',
    instead: 'remove it; remove old sessions with `mur sessions prune`',
  },
];

export const ARTIFACT_REFERENCE_KEYS: readonly ReferenceKey[] = [];

/** The refusal of a reference key at schema path `pattern` (list indexes as `[]`), if it is one. */
export function referenceRefusal(table: readonly ReferenceKey[], pattern: string): Problem | undefined {
  const r = table.find((k) => k.path === pattern);
  if (!r) return undefined;
  return {
    code: 'E-MAN-026',
    message: `'${pattern.replace(/^.*\./, '')}' (${pattern}, a key of the reference runtime) is not supported here: ${r.why}`,
    hint: r.instead,
  };
}

/** A reference-runtime value a schema row cannot honour (E-MAN-026). */
export function referenceValue(message: string, hint: string): Problem {
  return { code: 'E-MAN-026', message, hint };
}
