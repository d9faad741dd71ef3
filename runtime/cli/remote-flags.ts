/** The flags every command that talks to a capsule takes (`mur send`, `mur chat`, `mur tasks`). */
import type { FlagSpec } from './args.ts';
import { TRANSPORTS, type TransportName } from '../client/connect.ts';
import type { TargetOptions } from '../client/open-target.ts';
import { UsageError } from './args.ts';

export const TARGET_FLAGS: FlagSpec = {
  namespace: { type: 'string', help: "a Capsule target's namespace (also -n; default: the kubeconfig context's)" },
  kubeconfig: { type: 'string', help: 'kubeconfig file for Capsule targets (default: $KUBECONFIG, ~/.kube/config)' },
  context: { type: 'string', help: 'kubeconfig context for Capsule targets' },
  'service-account': { type: 'string', help: "ServiceAccount in the capsule's namespace whose token (audience: the capsule's URL) is sent (default: default)" },
  'api-key-file': { type: 'string', help: 'file holding an API key for the capsule (else $MURMUR_A2A_API_KEY); sent instead of a token' },
  transport: { type: 'string', help: "jsonrpc, rest or grpc: the binding to prefer among those the agent card offers (default: the card's order)" },
};

export const TARGET_HELP = `<target> is an A2A URL (http://127.0.0.1:8080/, what mur serve prints) or a Capsule in the
cluster your kubeconfig reaches: capsule/<name> [-n <namespace>]. For a Capsule, mur reads it
(it must be Ready), takes status.a2aUrl, requests a token of the ServiceAccount (--service-account,
default 'default') with that URL as audience (your RBAC decides: create on serviceaccounts/token),
and reaches the Service through a port-forward it opens and closes itself (get services, list pods,
create pods/portforward). An API-key capsule takes --api-key-file or $MURMUR_A2A_API_KEY instead.`;

/** `-n X` as kubectl spells it, for the flag parser that knows only `--namespace X`. */
export function kubectlShortFlags(argv: string[]): string[] {
  return argv.map((a) => (a === '-n' ? '--namespace' : a.startsWith('-n=') ? `--namespace=${a.slice(3)}` : a));
}

/** Every value of a flag that may be given more than once (`--file a --file b`), and the rest. */
export function takeRepeated(argv: string[], name: string): { values: string[]; rest: string[] } {
  const values: string[] = [];
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    if (a === `--${name}`) {
      const v = argv[++i];
      if (v === undefined) throw new UsageError(`--${name} needs a value`);
      values.push(v);
    } else if (a.startsWith(`--${name}=`)) values.push(a.slice(name.length + 3));
    else rest.push(a);
  }
  return { values, rest };
}

export function targetOptions(
  target: string | undefined,
  flags: Record<string, string | number | boolean | undefined>,
  note?: (s: string) => void,
): TargetOptions {
  const transport = flags.transport as string | undefined;
  if (transport !== undefined && !(transport in TRANSPORTS))
    throw new UsageError(`--transport must be one of ${Object.keys(TRANSPORTS).join(', ')}, got ${JSON.stringify(transport)}`);
  const s = (k: string) => flags[k] as string | undefined;
  return {
    target,
    ...(s('namespace') ? { namespace: s('namespace') } : {}),
    ...(s('kubeconfig') ? { kubeconfig: s('kubeconfig') } : {}),
    ...(s('context') ? { context: s('context') } : {}),
    ...(s('service-account') ? { serviceAccount: s('service-account') } : {}),
    ...(s('api-key-file') ? { apiKeyFile: s('api-key-file') } : {}),
    ...(transport ? { transport: transport as TransportName } : {}),
    ...(note ? { note } : {}),
  };
}

/** Exit status of a task's outcome: 0 completed, 1 failed or rejected, 3 input-required, 4 canceled. */
export function exitStatus(state: string): number {
  if (state === 'completed') return 0;
  if (state === 'input-required') return 3;
  if (state === 'canceled') return 4;
  return 1;
}
