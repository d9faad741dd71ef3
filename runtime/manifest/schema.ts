/**
 * THE manifest schema: one table per manifest kind, each row a field path (YAML spelling, `[]` for
 * list items), its type, default, validation and description. The validator (validate.ts) walks the
 * YAML document against these rows, and docs/manifest.md is generated from them (`npm run gen:docs`,
 * runtime/manifest/docs.ts); a test keeps the page in sync.
 */
import { COMMIT_POLICIES, EXECUTION_MODES, HANDLERS } from '../contracts/commit-table.ts';
import {
  checkApiKey,
  checkBinaryName,
  checkEnvGlob,
  checkEnvName,
  checkHttpUrl,
  checkName,
  checkOciRef,
  checkRelativePath,
  checkSha256,
  checkVersion,
  isProblem,
  parseNetworkEntry,
  type Problem,
} from './checks.ts';
import { referenceValue } from './reference-keys.ts';
import {
  MCP_ELICITATION,
  MCP_SAMPLING,
  MCP_SERVER_NAME_MAX,
  MCP_TOOL_NAME_MAX,
  checkMcpCommandWord,
  checkMcpEnvName,
  checkMcpServerName,
  checkMcpToolEntry,
  checkMcpUrl,
} from './mcp.ts';

export type FieldType =
  | 'string'
  | 'version' // a string; an unquoted number such as 1.0 is taken verbatim from the source text
  | 'integer'
  | 'number'
  | 'boolean'
  | 'bytes' // integer bytes, or a string with a Ki/Mi/Gi suffix ("512Mi", "1GiB")
  | 'enum'
  | 'object' // a mapping with the fixed keys listed as child rows
  | 'mapping' // an opaque mapping, passed through untouched
  | 'string-map' // a mapping of string keys to string values
  | 'list' // a sequence; its items are described by the `<path>[]` row
  | 'schema'; // a JSON Schema: a YAML mapping, or a string holding a JSON object

export interface FieldSpec {
  /** YAML path, dotted; `[]` marks the items of a list. */
  path: string;
  type: FieldType;
  /** Allowed values of an `enum`. */
  values?: readonly string[];
  /** Required whenever its parent mapping is present. */
  required?: boolean;
  /** Applied when the field is absent (and its parent is present or materialized). */
  default?: unknown;
  /** Docs text for the default when it is not a plain literal. */
  defaultText?: string;
  /** An absent `object` is created (with its defaults) rather than left undefined. */
  materialize?: boolean;
  /** Numeric bounds (inclusive unless the `*Exclusive` flag is set). */
  min?: number;
  max?: number;
  minExclusive?: boolean;
  /** A present list must not be empty. */
  nonEmpty?: boolean;
  /** A `string` that also takes an unquoted number verbatim from the source text (hashes). */
  verbatimNumbers?: boolean;
  /** Extra check on a well-typed value. */
  check?: (value: unknown) => Problem | undefined;
  /** Validation rule, for the docs. */
  validation: string;
  description: string;
  /** Rows not rendered individually in the docs (summarised by their parent row). */
  docHidden?: boolean;
}

const str = (f: (v: string) => Problem | undefined) => (v: unknown) => f(v as string);
const networkCheck = (v: unknown): Problem | undefined => {
  const r = parseNetworkEntry(v as string);
  return isProblem(r) ? r : undefined;
};

export const ARTIFACT_RUNTIMES = ['tool', 'driver', 'hook', 'skill'] as const;
export type ArtifactRuntime = (typeof ARTIFACT_RUNTIMES)[number];

export const MIB = 1024 * 1024;

/** A manifest is a few KiB; past this murmur.yaml is refused before it is parsed (E-MAN-031). */
export const MAX_MANIFEST_BYTES = MIB;
/**
 * A system prompt, inline or in its file (E-MAN-032): sent with every turn, so it is kept to what a
 * prompt can be. 1 MiB admits every `system_prompt` the Capsule CRD admits (262144 characters of
 * up to 4 bytes each), so a Capsule is never refused here for a prompt the API server took.
 */
export const MAX_SYSTEM_PROMPT_BYTES = MIB;
/** Components have 32-bit linear memories: 65536 pages of 64 KiB are all one can address. */
export const MAX_MEMORY_BYTES = 4 * 1024 * MIB;
/**
 * The longest deadline or timeout in seconds: Node's timers hold at most 2^31 - 1 ms (24.8 days),
 * and a longer delay fires at once instead of late.
 */
export const MAX_TIMER_SECS = Math.floor((2 ** 31 - 1) / 1000);
/**
 * lifecycle.input_timeout_secs when the manifest gives none: a task waiting for input fails after
 * an hour instead of holding its place (and every task queued behind it) for ever. The operator
 * renders the same value into every Capsule's murmur.yaml.
 */
export const DEFAULT_INPUT_TIMEOUT_SECS = 3600;

const promptCheck =
  (field: string) =>
  (v: unknown): Problem | undefined => {
    const bytes = Buffer.byteLength(v as string, 'utf8');
    if (bytes <= MAX_SYSTEM_PROMPT_BYTES) return undefined;
    return {
      code: 'E-MAN-032',
      message: `'${field}' is ${bytes} bytes, over the limit of ${MAX_SYSTEM_PROMPT_BYTES} bytes (1 MiB)`,
      hint: 'shorten the prompt; it is sent with every turn',
    };
  };

/** Capability rows, relative to a `capabilities` block (capsule-wide or per artifact). */
// biome-ignore format: a table, one field per line, reads and diffs better than rows spread over many lines each
const CAPABILITY_ROWS: FieldSpec[] = [
  { path: 'network', type: 'object', materialize: true, validation: 'mapping', description: 'Outgoing network grant.' },
  { path: 'network.allow', type: 'list', default: [], defaultText: '[] (no network)', validation: 'list of entries', description: 'Hosts the capsule may connect to.' },
  { path: 'network.allow[]', type: 'string', check: networkCheck, validation: "`host`, `host:port`, an `http(s)://host[:port][/path]` URL (the path is ignored: a grant is per destination; no query, fragment or credentials; port 1-65535), a wildcard `*.domain` (with a port or scheme too; the names below the domain at any depth, not the domain itself; the domain has two labels or more: `*`, `*.com`, `a.*.com` are refused), an IP address (IPv6 in brackets when a port or scheme is given), or `capsule://<namespace>/<name>` (kept verbatim for the operator); CIDRs are refused (a Capsule's NetworkPolicy grant) — docs/networking.md#the-grammar-of-an-entry", description: 'One allowed destination.' },
  { path: 'filesystem', type: 'object', materialize: true, validation: 'mapping', description: 'Filesystem grant inside the session workdir.' },
  { path: 'network.unix_sockets', type: 'boolean', defaultText: '`true` (not restricted)', check: (v) => (v === false ? referenceValue("'unix_sockets: false' cannot be honoured: shell subprocesses are not seccomp-filtered here, so nothing stops them opening Unix sockets", 'remove the key (or write `true`); WebAssembly components have no sockets beyond `network.allow` either way') : undefined), validation: '`true` (the reference runtime\'s key; `false` is refused: not enforceable here)', description: 'Reference runtime: whether shell subprocesses may open Unix sockets.' },
  { path: 'filesystem.scope', type: 'string', check: str((v) => checkRelativePath(v, 'filesystem.scope')), default: '.', defaultText: '`.` (whole workdir)', validation: "relative to the workdir, no `..`, not absolute", description: 'Directory (under the workdir) the components may read and write.' },
  { path: 'filesystem.workdir_exec', type: 'boolean', defaultText: '`true` (not restricted)', check: (v) => (v === false ? referenceValue("'workdir_exec: false' cannot be honoured: there is no Landlock here, so an allowed shell binary (sh, python, ...) can run files in the workdir", 'remove the key (or write `true`); keep interpreters out of `shell.allow` to keep workdir files from running') : undefined), validation: '`true` (the reference runtime\'s key; `false` is refused: not enforceable here)', description: 'Reference runtime: whether files in the workdir may be executed.' },
  { path: 'shell', type: 'object', validation: 'mapping; absent = no shell tool', description: 'Shell tool grant.' },
  { path: 'shell.allow', type: 'list', required: true, nonEmpty: true, validation: 'non-empty list (a present but empty list is an error)', description: 'Binaries the shell tool may run; each becomes a tool named after it.' },
  { path: 'shell.allow[]', type: 'string', check: str(checkBinaryName), validation: 'bare binary name (no `/`, no arguments)', description: 'One allowed binary.' },
  { path: 'shell.strip_env', type: 'list', default: [], validation: 'list of globs', description: 'Extra env vars removed from shell subprocesses (credential-shaped names are always removed).' },
  { path: 'shell.strip_env[]', type: 'string', check: str(checkEnvGlob), validation: 'env name with `*`/`?` wildcards, e.g. `AWS_*`', description: 'One pattern.' },
  { path: 'env', type: 'object', materialize: true, validation: 'mapping', description: 'Host environment passed to WASM guests.' },
  { path: 'env.allow', type: 'list', default: [], validation: 'list of env names', description: 'Host env vars a guest may see (credential-shaped names are still stripped).' },
  { path: 'env.allow[]', type: 'string', check: str(checkEnvName), validation: 'env var name', description: 'One env var name.' },
  { path: 'limits', type: 'object', materialize: true, validation: 'mapping', description: 'Per-component resource limits.' },
  { path: 'limits.memory_bytes', type: 'bytes', default: 512 * MIB, defaultText: '536870912 (512 MiB)', min: 1, max: MAX_MEMORY_BYTES, validation: 'integer from 1 to 4294967296 (4 GiB: a 32-bit linear memory), or a string like `512Mi` / `4GiB`', description: 'Linear memory ceiling of each component instance.' },
  { path: 'limits.deadline_seconds', type: 'integer', default: 600, min: 1, max: MAX_TIMER_SECS, validation: `integer 1-${MAX_TIMER_SECS} (24.8 days)`, description: 'Wall-clock deadline of one tool or driver call.' },
  { path: 'limits.hook_deadline_seconds', type: 'integer', default: 30, min: 1, max: MAX_TIMER_SECS, validation: `integer 1-${MAX_TIMER_SECS} (24.8 days)`, description: 'Wall-clock deadline of one hook handler call.' },
];

function capabilityRows(prefix: string, perArtifact: boolean): FieldSpec[] {
  return CAPABILITY_ROWS.map((r) => {
    const row: FieldSpec = { ...r, path: `${prefix}.${r.path}` };
    if (perArtifact) {
      delete row.default;
      delete row.defaultText;
      delete row.materialize;
      row.docHidden = true;
    }
    return row;
  });
}

/** The capsule manifest (`murmur.yaml` of a capsule). */
// biome-ignore format: a table, one field per line, reads and diffs better than rows spread over many lines each
export const CAPSULE_SCHEMA: readonly FieldSpec[] = [
  { path: 'name', type: 'string', required: true, check: str(checkName), validation: '`[a-z0-9-]`, 1-100 chars', description: 'Capsule name.' },
  { path: 'version', type: 'version', required: true, check: str(checkVersion), validation: 'non-empty, no spaces or slashes', description: 'Capsule version.' },
  { path: 'mur_version', type: 'string', validation: 'string; recorded, not checked', description: "The reference runtime's `mur` release the capsule was written for. Accepted and not compared: this runtime's versions are its own." },
  { path: 'registry', type: 'mapping', validation: 'any mapping; not read by the runtime', description: "The reference CLI's workspace setting for `mur install`/`mur publish` (`{default, remote_url}`); not read by the runtime, as in the reference. Here give `--registry <dir>` or `--oci <ref>` to those commands." },
  { path: 'artifacts', type: 'list', default: [], validation: 'list of artifact entries; names unique', description: 'WASM artifacts the capsule stages from the registry (or a remote source).' },
  { path: 'artifacts[]', type: 'object', validation: 'mapping', description: 'One artifact entry.' },
  { path: 'artifacts[].name', type: 'string', required: true, check: str(checkName), validation: '`[a-z0-9-]`, unique in the capsule', description: 'Artifact name (its registry directory and `tools/<name>/`).' },
  { path: 'artifacts[].version', type: 'version', check: str(checkVersion), defaultText: 'required unless `source` is given', validation: 'exact version', description: 'Version resolved from the registry and pinned in `murmur.lock`.' },
  { path: 'artifacts[].runtime', type: 'enum', values: ARTIFACT_RUNTIMES, default: 'tool', validation: '`tool` | `driver` | `hook` | `skill`', description: 'Role: tools and skills are model-visible; drivers and hooks are not.' },
  { path: 'artifacts[].source', type: 'object', validation: 'mapping', description: 'Remote artifact: fetched over HTTP(S) instead of from the registry.' },
  { path: 'artifacts[].source.url', type: 'string', check: str(checkHttpUrl), validation: 'http(s) URL of a `.wasm` component or a `.tar`/`.tar.gz` artifact bundle; with `sha256`; or give `oci` instead', description: 'Where to fetch the artifact.' },
  { path: 'artifacts[].source.sha256', type: 'string', verbatimNumbers: true, check: str(checkSha256), validation: '64 lowercase hex chars; required with `url`', description: 'SHA-256 of the fetched bytes; a mismatch refuses staging.' },
  { path: 'artifacts[].source.oci', type: 'string', check: str(checkOciRef), validation: '`<registry>/<repo>[:<tag>]@sha256:<64 hex>` (digest-pinned); instead of `url`', description: 'A Wasm OCI artifact (config `application/vnd.wasm.config.v0+json`, one `application/wasm` layer, as `oras`/`wkg` push it); the manifest and the component are verified against the digest before use.' },
  { path: 'artifacts[].capabilities', type: 'object', validation: 'same fields as `capabilities`; narrowing only; not on skills', description: "Per-artifact grant. Tools and drivers without one inherit the capsule's; hooks without one get none. Every entry must lie within the capsule-wide grant." },
  ...capabilityRows('artifacts[].capabilities', true),
  { path: 'artifacts[].capabilities.task_io', type: 'object', validation: 'mapping; hooks only', description: 'Hook access to `murmur:task-io/read` (the task input and result text).' },
  { path: 'artifacts[].capabilities.task_io.read', type: 'boolean', defaultText: '`false`', validation: 'boolean', description: 'When true the hook may read the task input and result; otherwise every read answers `not-granted`.' },
  { path: 'artifacts[].capabilities.conversation', type: 'object', validation: 'mapping; hooks only', description: 'Hook access to `murmur:conversation/read` (the durable conversation record).' },
  { path: 'artifacts[].capabilities.conversation.read', type: 'boolean', defaultText: '`false`', validation: 'boolean', description: 'When true the hook may page the conversation record; otherwise `not-granted`.' },
  { path: 'artifacts[].on_overflow', type: 'enum', values: ['drop', 'block'], defaultText: '`drop` (hooks only)', validation: '`drop` | `block`; hooks only', description: "What an async hook's full queue does with a new event." },
  { path: 'artifacts[].binding', type: 'enum', values: HANDLERS, defaultText: "the artifact's own", validation: 'a handler name; hooks only', description: "Hook contract (with `execution_mode`, `commit_policy`): for a component that carries no murmur.yaml of its own (a bare `.wasm` from `source.url`, a `source.oci` artifact) it becomes the derived manifest's contract; for an artifact with its own murmur.yaml every field given here must equal the artifact's, or staging refuses (`E-REG-017`)." },
  { path: 'artifacts[].execution_mode', type: 'enum', values: EXECUTION_MODES, defaultText: "the artifact's own", validation: '`blocking` | `async`; hooks only; checked against the commit table', description: 'Hook contract: see `binding`.' },
  { path: 'artifacts[].commit_policy', type: 'enum', values: COMMIT_POLICIES, defaultText: "the artifact's own", validation: 'hooks only; `none` or the one policy its binding honors (commit table); `deny` needs `binding: on-shell` or `on-tool-call`', description: 'Hook contract: see `binding`.' },
  { path: 'artifacts[].prompt_payload', type: 'boolean', defaultText: '`false`', check: (v) => (v === true ? referenceValue("'prompt_payload: true' cannot be honoured: a skill's text is staged (tools/<name>/skill.md) but never placed in the prompt here", 'remove the key; put the text in a file of the capsule folder and name it in `inference.system_prompt_file`') : undefined), validation: '`false` (the reference runtime\'s key; `true` is refused)', description: "Reference runtime: whether a skill's text goes into the prompt (it does not here)." },
  { path: 'artifacts[].config', type: 'mapping', validation: 'any mapping', description: 'Opaque configuration handed to the artifact.' },

  { path: 'capabilities', type: 'object', materialize: true, validation: 'mapping', description: 'The capsule-wide grant (the ceiling for every artifact).' },
  ...capabilityRows('capabilities', false),
  { path: 'capabilities.containment', type: 'enum', values: ['advisory', 'scoped', 'sealed'], defaultText: '`advisory`', check: (v) => (v !== 'advisory' ? referenceValue(`'containment: ${String(v)}' cannot be honoured: this runtime applies no OS containment (Landlock, seccomp) to shell subprocesses, so its class is advisory`, "write `containment: advisory` or remove the key; the fences here are the WebAssembly sandbox, the grants and the network allowlist (in a cluster also the pod's NetworkPolicy and security context)") : undefined), validation: '`advisory` (`scoped` and `sealed` are refused: not enforceable here)', description: "Reference runtime: the containment floor of the capsule." },

  { path: 'inference', type: 'object', defaultText: 'absent = script capsule', validation: 'mapping', description: 'The agent loop. Without it the capsule is a script capsule.' },
  { path: 'inference.driver', type: 'object', defaultText: 'required (or `provider`)', validation: 'mapping; required unless the older spelling `provider` is given', description: 'The inference driver.' },
  { path: 'inference.driver.artifact', type: 'string', required: true, validation: 'names an artifact with `runtime: driver`', description: 'Driver artifact.' },
  { path: 'inference.driver.config', type: 'mapping', validation: 'any mapping', description: 'Opaque driver configuration.' },
  { path: 'inference.provider', type: 'object', validation: 'mapping; exclusive with `driver`', description: "The reference runtime's older spelling of `inference.driver`." },
  { path: 'inference.provider.artifact', type: 'string', required: true, validation: 'names an artifact with `runtime: driver`', description: 'Driver artifact (as `inference.driver.artifact`).' },
  { path: 'inference.max_task_reopens', type: 'integer', min: 0, defaultText: '`lifecycle.max_task_reopens`', validation: 'integer >= 0; must equal `lifecycle.max_task_reopens` when both are given', description: "The reference runtime's v0.2 spelling of `lifecycle.max_task_reopens`." },
  { path: 'inference.model', type: 'string', required: true, validation: 'non-empty', description: 'Model name passed to the driver.' },
  { path: 'inference.endpoint', type: 'string', check: str(checkHttpUrl), validation: 'http(s) URL', description: 'Provider endpoint passed to the driver.' },
  { path: 'inference.transport', type: 'enum', values: ['http', 'process'], default: 'http', validation: '`http` (`process` is refused: a capsule\'s inference always runs through its driver component)', description: 'The reference runtime\'s inference transport; only `http` (a driver component calling the provider) exists here.' },
  { path: 'inference.api_key', type: 'string', check: str(checkApiKey), validation: 'a `${UPPER_SNAKE}` reference to a host environment variable (unset = refused before launch), or a literal', description: 'Provider API key handed to the driver as `MURMUR_INFERENCE_API_KEY` (default: the runtime\'s own `MURMUR_INFERENCE_API_KEY`).' },
  { path: 'inference.max_turns', type: 'integer', default: 10, min: 1, validation: 'integer >= 1', description: 'Inference turns per task attempt.' },
  { path: 'inference.max_tokens', type: 'integer', default: 8192, min: 1, validation: 'integer >= 1', description: 'Output token cap of one turn.' },
  { path: 'inference.max_session_tokens', type: 'integer', min: 1, validation: 'integer >= 1', description: 'Spend ceiling: tokens a session may spend; a call that would exceed it is refused before dispatch.' },
  { path: 'inference.system_prompt', type: 'string', check: promptCheck('system_prompt'), validation: 'at most 1 MiB (1048576 bytes of UTF-8); exclusive with `system_prompt_file`', description: 'System prompt text (after the runtime\'s `[Capsule]` block).' },
  { path: 'inference.system_prompt_file', type: 'string', check: str((v) => checkRelativePath(v, 'system_prompt_file')), validation: 'relative to the capsule dir, no `..`; a regular file of at most 1 MiB; exclusive with `system_prompt`', description: 'File holding the system prompt.' },
  { path: 'inference.compaction', type: 'object', materialize: true, validation: 'mapping', description: 'History compaction.' },
  { path: 'inference.compaction.threshold', type: 'number', default: 0.98, min: 0, minExclusive: true, max: 1, validation: 'number in (0, 1]', description: 'Fraction of `context.max_tokens` at which compaction fires.' },
  { path: 'inference.compaction.model', type: 'string', validation: 'non-empty', description: 'Model for the compaction summary (default: `inference.model`).' },
  { path: 'inference.compaction.system_prompt', type: 'string', check: promptCheck('system_prompt'), validation: 'at most 1 MiB; exclusive with `system_prompt_file`', description: 'System prompt of the compaction call.' },
  { path: 'inference.compaction.system_prompt_file', type: 'string', check: str((v) => checkRelativePath(v, 'system_prompt_file')), validation: 'relative, no `..`; a regular file of at most 1 MiB; exclusive with `system_prompt`', description: 'File holding the compaction system prompt.' },
  { path: 'inference.compaction.dump_summaries', type: 'boolean', default: false, validation: 'boolean', description: 'Append each summary to `out/compaction-summaries.jsonl`.' },

  { path: 'context', type: 'object', materialize: true, validation: 'mapping', description: 'Context window.' },
  { path: 'context.max_tokens', type: 'integer', min: 1, validation: 'integer >= 1', description: 'Context window in tokens; enables compaction and context seeding.' },
  { path: 'context.seed_budget', type: 'number', default: 0.1, min: 0, max: 1, validation: 'number in [0, 1]', description: 'Share of `max_tokens` a seed-context hook may fill (`budget-tokens`).' },
  { path: 'context.seed_overflow_margin', type: 'number', default: 0.1, min: 0, validation: 'number >= 0', description: 'Over-budget margin within which the oldest seed messages are dropped.' },

  { path: 'lifecycle', type: 'object', materialize: true, validation: 'mapping', description: 'Task handling.' },
  { path: 'lifecycle.task_acceptance', type: 'enum', values: ['none', 'single', 'queue'], default: 'single', validation: '`none` | `single` | `queue`', description: 'How many A2A tasks the capsule accepts.' },
  { path: 'lifecycle.after_task', type: 'enum', values: ['exit', 'sleep'], defaultText: '`exit`', check: (v) => (v === 'sleep' ? referenceValue("'after_task: sleep' cannot be honoured: `mur run` ends with its task, and `mur serve` serves until it is stopped whatever after_task says", 'remove the key (or write `exit`); to keep a capsule taking tasks, run it with `mur serve` and `task_acceptance: queue`') : undefined), validation: '`exit` (`sleep` is refused)', description: 'Reference runtime: what the capsule does after its task. `exit`: `mur run` ends with its task (`mur serve` serves until stopped).' },
  { path: 'lifecycle.queue_depth', type: 'integer', default: 1, min: 1, validation: 'integer >= 1', description: 'Pending tasks held in `queue` mode.' },
  { path: 'lifecycle.input_timeout_secs', type: 'integer', default: DEFAULT_INPUT_TIMEOUT_SECS, defaultText: `${DEFAULT_INPUT_TIMEOUT_SECS} (1 hour)`, min: 1, max: MAX_TIMER_SECS, validation: `integer 1-${MAX_TIMER_SECS} (24.8 days)`, description: 'Timeout of `request-input`: a task given no reply within it fails (`E-A2A-010`), so it never holds the queue for ever. The reference runtime waits for ever when the key is absent.' },
  { path: 'lifecycle.conversation', type: 'enum', values: ['stateless', 'threaded'], default: 'stateless', validation: '`stateless` | `threaded`', description: 'Whether tasks sharing a context id continue one conversation.' },
  { path: 'lifecycle.max_task_reopens', type: 'integer', default: 1, min: 0, validation: 'integer >= 0 (0 disables reopening)', description: 'How often an `on-task-end` hook may reopen a task.' },
  { path: 'lifecycle.delegation_deadline_secs', type: 'integer', default: 600, min: 1, max: MAX_TIMER_SECS, validation: `integer 1-${MAX_TIMER_SECS} (24.8 days)`, description: 'Deadline of a delegated task.' },

  { path: 'observability', type: 'object', materialize: true, validation: 'mapping', description: 'Telemetry.' },
  { path: 'observability.otel_endpoint', type: 'string', check: (v) => ((v as string) === '' ? undefined : checkHttpUrl(v as string)), validation: 'http(s) URL; empty = absent', description: 'OTLP/HTTP endpoint.' },
  { path: 'observability.otel_headers', type: 'string-map', default: {}, validation: 'mapping of strings', description: 'Headers sent to the OTLP endpoint.' },
  { path: 'observability.metrics_port', type: 'integer', min: 1, max: 65535, validation: 'integer 1-65535', description: 'Port of the Prometheus metrics endpoint.' },

  { path: 'mcp', type: 'object', validation: 'mapping; absent = no MCP servers', description: "This runtime's extension (docs/mcp.md): MCP servers whose tools the model may call beside the capsule's own." },
  { path: 'mcp.servers', type: 'list', required: true, nonEmpty: true, validation: 'non-empty list; names unique', description: 'The MCP servers.' },
  { path: 'mcp.servers[]', type: 'object', validation: 'mapping', description: 'One MCP server.' },
  { path: 'mcp.servers[].name', type: 'string', required: true, check: str(checkMcpServerName), validation: `\`[a-z0-9-]\`, 1-${MCP_SERVER_NAME_MAX} chars, unique (\`E-MCP-001\`, \`E-MCP-005\`)`, description: 'Server name; the model sees its tools as `mcp__<name>__<tool>`.' },
  { path: 'mcp.servers[].url', type: 'string', defaultText: 'required unless `command`', check: str(checkMcpUrl), validation: 'http(s) URL without credentials (`E-MCP-002`), covered by `capabilities.network.allow` (`E-MCP-003`); exclusive with `command` (`E-MCP-016`)', description: "The server's Streamable HTTP endpoint." },
  { path: 'mcp.servers[].command', type: 'list', nonEmpty: true, validation: 'non-empty list; its first word a binary in `capabilities.shell.allow` (`E-MCP-017`); exclusive with `url`', description: 'A local MCP server over stdio: the binary and its arguments, started when the session opens, with the shell tool\'s environment (credential-shaped names stripped) in the session workdir.' },
  { path: 'mcp.servers[].command[]', type: 'string', check: str(checkMcpCommandWord), validation: 'non-empty string (`E-MCP-016`)', description: 'One word.' },
  { path: 'mcp.servers[].tools', type: 'list', required: true, nonEmpty: true, validation: "non-empty list: tool names, or `'*'` alone (`E-MCP-004`)", description: "The server's tools the model may call: these names, or every tool it lists (`'*'`)." },
  { path: 'mcp.servers[].tools[]', type: 'string', check: str(checkMcpToolEntry), validation: `\`[A-Za-z0-9_-]\`, 1-${MCP_TOOL_NAME_MAX} chars, or \`'*'\``, description: 'One tool name, as the server lists it.' },
  { path: 'mcp.servers[].token_env', type: 'string', check: str(checkMcpEnvName), validation: 'environment variable name (`E-MCP-006`); unset when the session opens = refused (`E-MCP-007`)', description: 'Variable holding a bearer token, sent as `Authorization: Bearer <token>` (on Kubernetes: filled from a Secret). Held as a secret: redacted from the trace, spans and answers.' },
  { path: 'mcp.servers[].headers_env', type: 'string-map', default: {}, validation: 'mapping of header name to environment variable name (`E-MCP-006`); not `Authorization` or a header the transport sets', description: 'Headers sent to the server, each value read from the named variable; held as secrets like the token.' },
  { path: 'mcp.servers[].sampling', type: 'enum', values: MCP_SAMPLING, default: 'refuse', validation: '`refuse` | `driver`', description: "The server's `sampling/createMessage` requests: refused with the protocol's error, or run through the capsule's own driver against its spend ceiling." },
  { path: 'mcp.servers[].elicitation', type: 'enum', values: MCP_ELICITATION, default: 'input-required', validation: '`refuse` | `input-required`', description: "The server's `elicitation/create` requests: refused, or asked of the task's caller as `input-required` (answered over A2A)." },

  { path: 'trace', type: 'object', materialize: true, validation: 'mapping', description: 'trace.jsonl options.' },
  { path: 'trace.include_tool_output', type: 'boolean', default: false, validation: 'boolean', description: 'Record tool output on `tool_call` events.' },
];

/** An artifact's own `murmur.yaml` (inside the artifact / registry entry). */
// biome-ignore format: a table, one field per line, reads and diffs better than rows spread over many lines each
export const ARTIFACT_SCHEMA: readonly FieldSpec[] = [
  { path: 'name', type: 'string', required: true, check: str(checkName), validation: '`[a-z0-9-]`, 1-100 chars', description: 'Artifact name.' },
  { path: 'version', type: 'version', required: true, check: str(checkVersion), validation: 'non-empty; `latest`, `stable`, `edge` cannot be published', description: 'Artifact version.' },
  { path: 'runtime', type: 'enum', values: [...ARTIFACT_RUNTIMES, 'wasm', 'native'], default: 'tool', validation: '`tool` | `driver` | `hook` | `skill`; `wasm` (the reference runtime\'s spelling) = a WebAssembly component whose role the capsule entry gives; `native` is refused', description: 'Role of the artifact.' },
  { path: 'implementation', type: 'enum', values: ['wasm', 'native'], default: 'wasm', validation: '`wasm` (`native` is refused: only WebAssembly components run here)', description: 'The reference runtime\'s tool implementation kind.' },
  { path: 'execution', type: 'enum', values: ['wasm', 'native', 'static'], validation: '`wasm` | `static` (skills); `native` is refused', description: 'The reference runtime\'s packaging type.' },
  { path: 'requires_files', type: 'list', validation: 'list of relative paths (no `..`, not absolute); the component and `skill.md` are found among them', description: 'Exactly the files `mur pack` puts in the package (besides murmur.yaml); default: the component (skills: `skill.md`).' },
  { path: 'requires_files[]', type: 'string', check: str((v) => checkRelativePath(v, 'requires_files')), validation: 'relative path inside the artifact folder', description: 'One file.' },
  { path: 'description', type: 'string', default: '', validation: 'string', description: 'Shown to the model (tools) and by `describe`.' },
  { path: 'tags', type: 'list', default: [], validation: 'list of strings', description: 'Free-form tags.' },
  { path: 'tags[]', type: 'string', validation: 'string', description: 'One tag.' },
  { path: 'input_schema', type: 'schema', validation: 'YAML mapping, or a string holding a JSON object', description: "JSON Schema of the tool's input (the model-visible `parameters`)." },
  { path: 'output_schema', type: 'schema', validation: 'YAML mapping, or a string holding a JSON object', description: "JSON Schema of the tool's output." },
  { path: 'binding', type: 'enum', values: HANDLERS, defaultText: 'absent = every session event except `on-stage`', validation: 'a handler name; hooks only', description: 'Hook: the one handler the hook receives.' },
  { path: 'execution_mode', type: 'enum', values: EXECUTION_MODES, defaultText: '`blocking` (hooks)', validation: '`blocking` | `async`; hooks only; `async` needs `commit_policy: none`; never on `on-stage`', description: 'Hook: whether the loop waits for the hook.' },
  { path: 'commit_policy', type: 'enum', values: COMMIT_POLICIES, defaultText: '`none` (hooks)', validation: 'hooks only; `none` or the one policy its binding honors (commit table); `deny` needs `binding: on-shell` or `on-tool-call`', description: "Hook: what the runtime does with the hook's output." },
];

export type SchemaKind = 'capsule' | 'artifact';
export const SCHEMAS: Readonly<Record<SchemaKind, readonly FieldSpec[]>> = { capsule: CAPSULE_SCHEMA, artifact: ARTIFACT_SCHEMA };

export function snakeToCamel(s: string): string {
  return s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}
