/** `mur console`: a web page for one cluster's Capsules, served on 127.0.0.1 with the viewer's own identity. */
import { MurError } from '../errors.ts';
import { helpText, parseArgs, UsageError, type FlagSpec } from './args.ts';
import { loadKubeConfig } from '../client/kubeconfig.ts';
import { parseTarget } from '../client/target.ts';
import { startConsole, type RunningConsole } from '../console/server.ts';

export const CONSOLE_FLAGS: FlagSpec = {
  port: { type: 'number', help: 'port on 127.0.0.1 (default 0: a free one)', default: 0 },
  kubeconfig: { type: 'string', help: 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config)' },
  context: { type: 'string', help: 'kubeconfig context' },
  'service-account': {
    type: 'string',
    help: "ServiceAccount in a capsule's namespace whose token (audience: the capsule's URL) the chat sends (default: default)",
  },
  'api-key-file': { type: 'string', help: 'file holding an API key sent to capsules instead of a token (else $MURMUR_A2A_API_KEY)' },
  help: { type: 'boolean', help: 'show this help' },
};

export const CONSOLE_HELP = helpText(
  'mur console [<A2A URL>...] [--port N] [--kubeconfig FILE] [--context NAME]',
  `Serves a web page on 127.0.0.1 for the cluster your kubeconfig reaches: every Capsule you can
see (readiness, replicas, model, tokens against the spend ceiling, conditions, recent events),
a capsule's tasks, a chat that streams a new task's steps and answer, and a task's timeline.
Everything is read as you: your kubeconfig's identity for the cluster, and for a capsule the
token mur send would use (create on serviceaccounts/token, then a port-forward). A2A URLs given
as arguments (a mur serve on this machine) are listed too.

The page's URL carries a random token made for this run: other pages in your browser and other
users of this machine cannot call the console without it. Ctrl-C stops it.`,
  CONSOLE_FLAGS,
);

/** Starts the console and prints its URL (undefined for --help); the caller closes it. */
export async function openConsole(argv: string[], out: (s: string) => void, err: (s: string) => void): Promise<RunningConsole | undefined> {
  const { flags, positionals } = parseArgs(argv, CONSOLE_FLAGS);
  if (flags.help) {
    out(CONSOLE_HELP);
    return undefined;
  }
  const port = flags.port as number;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be an integer 0–65535, got ${port}`);
  const urls = positionals.map((p, i) => {
    const t = parseTarget(p);
    if (t.kind !== 'url')
      throw new MurError('E-CLI-050', `argument ${i + 1} '${p}' is not an A2A URL`, {
        hint: 'Capsules are listed from the cluster; arguments name extra A2A URLs (http://127.0.0.1:8080/)',
      });
    return t.url;
  });
  const s = (k: string) => flags[k] as string | undefined;
  let kc: Awaited<ReturnType<typeof loadKubeConfig>> | { error: string };
  try {
    kc = loadKubeConfig({ ...(s('kubeconfig') ? { file: s('kubeconfig') } : {}), ...(s('context') ? { context: s('context') } : {}) });
  } catch (e) {
    // Without a cluster the console still serves the URLs it was given, and says why no Capsules.
    if (urls.length === 0) throw e;
    kc = { error: (e as Error).message };
    err(`no cluster: ${(e as Error).message}`);
  }
  const c = await startConsole({
    port,
    kc,
    urls,
    ...(s('kubeconfig') ? { kubeconfig: s('kubeconfig') } : {}),
    ...(s('context') ? { context: s('context') } : {}),
    ...(s('service-account') ? { serviceAccount: s('service-account') } : {}),
    ...(s('api-key-file') ? { apiKeyFile: s('api-key-file') } : {}),
  });
  out(`mur console at ${c.url}`);
  return c;
}

export async function consoleCommand(argv: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const c = await openConsole(argv, out, err);
  if (!c) return 0;
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await c.close();
  return 0;
}
