/**
 * `mur serve <capsule-dir>`: the capsule as a long-running A2A agent (what the runtime image runs in
 * a cluster). A2A JSON-RPC on --a2a-port; /metrics on --metrics-port (a separate port, so a
 * NetworkPolicy can open one and not the other); /healthz and /readyz on both.
 *
 * This module checks the flags, stages the capsule and transpiles what is not cached yet
 * (transpile-first.ts), and only then loads the server, the store, telemetry and the agent loop
 * (serve-staged.ts): a first run's transpile then runs beside a process of ≈ 55 MiB, not ≈ 90.
 */
import { helpText, parseArgs, type FlagSpec } from './args.ts';
import { stage } from '../compose/stage.ts';
import { planServeAuth } from './serve-auth.ts';
import { StartupClock } from './startup-clock.ts';
import { transpileFirst } from './transpile-first.ts';
import { MurError } from '../errors.ts';
import { LIMIT_DEFAULTS, type ConnectionLimits } from '../a2a/server/connection-limits.ts';
import { PUSH_LIMIT_DEFAULTS, type PushLimits } from '../a2a/peers/push-limits.ts';
import { envNonNegative } from '../env-number.ts';

export const SERVE_FLAGS: FlagSpec = {
  'a2a-port': { type: 'number', help: 'A2A JSON-RPC port', default: 8080 },
  'metrics-port': { type: 'number', help: 'Prometheus /metrics port (0 = off)', default: 9090 },
  host: { type: 'string', help: 'bind address', default: '127.0.0.1' },
  'public-url': { type: 'string', help: 'URL advertised in the agent card (default: http://<host>:<port>/)' },
  'grpc-port': {
    type: 'string',
    help: "also serve the A2A gRPC binding: on this port, or 'same' = on the A2A port itself (h2c connections told apart from HTTP/1.1 by their preface; grpc-js loaded on the first one); 0 = no gRPC",
    default: '0',
  },
  'api-keys': {
    type: 'string',
    help: 'bearer API keys: a file of holder:key lines or a folder with one file per key (a Secret); default $MURMUR_A2A_API_KEYS',
  },
  'token-review': { type: 'boolean', help: 'accept Kubernetes ServiceAccount tokens whose audience is the public URL (verified with TokenReview)' },
  'trusted-callers': { type: 'string', help: 'comma-separated callers whose trust header counts (apikey:<holder>, system:serviceaccount:<ns>:<name>)' },
  anonymous: { type: 'boolean', help: 'serve callers without credentials (as one anonymous, untrusted caller)' },
  registry: { type: 'string', help: 'artifact registry folder' },
  workdir: { type: 'string', help: 'where the session workdir is created (default: $MURMUR_WORK_ROOT or ~/.murmur/sessions)' },
  store: {
    type: 'string',
    help: "task, push-config and conversation store: sqlite:<file>, a file path, postgresql://…, or 'memory' (default: $MURMUR_STORE, else <work root>/<capsule>.store.db)",
  },
  'drain-secs': { type: 'number', help: 'on SIGTERM: seconds running tasks get to finish before they fail (the pod grace period must be longer)', default: 25 },
  quiet: { type: 'boolean', help: 'no progress lines' },
  help: { type: 'boolean', help: 'show this help' },
};

export const SERVE_HELP = helpText(
  'mur serve <capsule-dir> [--a2a-port 8080] [--metrics-port 9090] [flags]',
  'Stages the capsule and serves it as an A2A agent: agent card at /.well-known/agent-card.json,\nJSON-RPC (message/send, message/stream, tasks/get, tasks/cancel; A2A 1.0 names with the\nA2A-Version header), HTTP+JSON under /rest, gRPC with --grpc-port (a port, or "same": the A2A port). Callers authenticate with\n--api-keys and/or --token-review; without either, only a loopback --host is served (or --anonymous). lifecycle.task_acceptance decides how many tasks it takes: none, single\n(exits after one), queue (bounded by lifecycle.queue_depth).',
  SERVE_FLAGS,
);

export async function serveCommand(argv: string[], out: (s: string) => void = console.log): Promise<number> {
  const { flags, positionals } = parseArgs(argv, SERVE_FLAGS);
  if (flags.help) {
    out(SERVE_HELP);
    return 0;
  }
  const clock = new StartupClock();
  if (!positionals[0]) throw new MurError('E-CLI-001', 'mur serve needs a capsule folder', { hint: 'mur serve /etc/murmur/capsule --a2a-port 8080' });
  const host = String(flags.host);
  const port = Number(flags['a2a-port']);
  const publicUrl =
    (flags['public-url'] as string | undefined) ??
    `http://${host.includes(':') ? `[${host}]` : host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${port}/`;
  // Checked before staging (a refusal comes at once); the authenticator is built by serve-staged.ts.
  const authPlan = planServeAuth(flags, host, publicUrl);
  const grpcPort = grpcPortFlag(flags['grpc-port']);
  // Read before staging: a bad value is refused at once, not after the capsule is opened.
  const limits = a2aLimitsFromEnv(process.env);
  const staged = await stage({ capsuleDir: positionals[0], registryDir: flags.registry as string | undefined, workRoot: flags.workdir as string | undefined });
  clock.mark('stage');
  // A first run's transpiles, before the serving modules load: host/transpile-ahead.ts.
  await transpileFirst(staged, flags.quiet ? undefined : out);
  clock.mark('transpile');
  const { serveStaged } = await import('./serve-staged.ts');
  clock.mark('load');
  return serveStaged(staged, { flags, out, clock, host, port, publicUrl, authPlan, grpcPort, limits });
}

/**
 * `--grpc-port`: a TCP port of its own, `same` (the A2A port: what the operator gives every
 * Capsule, so its one Service port carries every binding) or 0 (no gRPC, undefined here).
 */
export function grpcPortFlag(value: unknown): number | 'same' | undefined {
  const v = String(value ?? '0').trim();
  if (v === 'same') return 'same';
  if (/^\d+$/.test(v) && Number(v) <= 65535) return Number(v) === 0 ? undefined : Number(v);
  throw new MurError('E-RUN-070', `--grpc-port must be a TCP port (1-65535), 0 (no gRPC) or 'same' (gRPC on the A2A port), got '${v.slice(0, 40)}'`, {
    hint: 'give --grpc-port same to serve gRPC on the A2A port, a free port for a port of its own, or leave it out',
    location: { field: '--grpc-port' },
  });
}

/** The A2A server's connection and push limits from the environment (docs/a2a.md "Limits"); unset = the default. */
export function a2aLimitsFromEnv(env: NodeJS.ProcessEnv): { connections: ConnectionLimits; push: PushLimits } {
  const n = (name: string, def: number, unit: string) =>
    envNonNegative(env, name, def, { code: 'E-A2A-040', unit, hint: `unset ${name} for the default (${def}), or give a whole number; 0 turns it off` });
  return {
    connections: {
      headersTimeoutMs: n('MURMUR_A2A_HEADERS_TIMEOUT_MS', LIMIT_DEFAULTS.headersTimeoutMs, 'milliseconds'),
      requestTimeoutMs: n('MURMUR_A2A_REQUEST_TIMEOUT_MS', LIMIT_DEFAULTS.requestTimeoutMs, 'milliseconds'),
      keepAliveTimeoutMs: n('MURMUR_A2A_KEEPALIVE_TIMEOUT_MS', LIMIT_DEFAULTS.keepAliveTimeoutMs, 'milliseconds'),
      maxConnectionsPerClient: n('MURMUR_A2A_MAX_CONNECTIONS_PER_CLIENT', LIMIT_DEFAULTS.maxConnectionsPerClient, 'connections'),
    },
    push: {
      maxConfigsPerTask: n('MURMUR_A2A_PUSH_MAX_CONFIGS_PER_TASK', PUSH_LIMIT_DEFAULTS.maxConfigsPerTask, 'configs'),
      maxConfigsPerCaller: n('MURMUR_A2A_PUSH_MAX_CONFIGS_PER_CALLER', PUSH_LIMIT_DEFAULTS.maxConfigsPerCaller, 'configs'),
      maxUrlLength: n('MURMUR_A2A_PUSH_MAX_URL_LENGTH', PUSH_LIMIT_DEFAULTS.maxUrlLength, 'characters'),
    },
  };
}
