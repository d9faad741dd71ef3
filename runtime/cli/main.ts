/** `mur`: run capsules on this machine, serve them over A2A, read their traces. */
import { isMurError } from '../errors.ts';
import { takeInferenceKey } from '../host/inference-key.ts';
import { isMurErrorList } from '../manifest/errors.ts';
import { UsageError } from './args.ts';
import { endOneShot, startOneShot } from './one-shot.ts';
import { redactProcessOutput } from './redacted-output.ts';
import { protectStartupSecrets } from './startup-secrets.ts';

// Each command's module is imported when that command runs: `mur --help` or `mur trace` must not
// load the agent loop, the A2A server and OpenTelemetry (≈ 200 modules) to print a page.

const HELP = `mur — run AI agent capsules sandboxed in WebAssembly

usage: mur <command> [args] [--help]

commands:
  run <capsule-dir>     stage a capsule and run one task here, printing each step
  serve <capsule-dir>   serve a capsule as an A2A agent (what the runtime image runs)
  trace <show|steps|report> <trace.jsonl|workdir>
                        read a session's trace; report finds redundant tool calls
  sessions <list|prune> the session workdirs left on this machine; prune removes old ones
  pack <artifact-dir>   pack a component and its murmur.yaml into a .mur.zip (checked)
  publish <dir|pkg>     publish into a registry folder (--registry) or an OCI registry (--oci)
  install <pkg.mur.zip> install a package into a capsule and pin it in murmur.lock
  pull <oci-ref>        pull a Wasm OCI artifact into a capsule and pin it in murmur.lock
  send <target> "text"  send a task to a capsule (A2A URL or capsule/<name> -n <ns>), stream its steps
  chat <target>         talk with a capsule in one conversation, answering its questions in place
  tasks <target> <list|get|cancel>
                        your tasks on a capsule
  console [<A2A URL>...]
                        a web page on 127.0.0.1: your Capsules, their tasks, a chat, a timeline
  help                  this text

Every command takes --help. Errors carry a stable code; docs/errors.md lists them all.`;

export async function main(argv: string[], out: (s: string) => void = console.log, err: (s: string) => void = console.error): Promise<number> {
  const [cmd, ...rest] = argv;
  try {
    switch (cmd) {
      case 'run':
        // One task, then exit: its peak resident set is what it costs (one-shot.ts).
        startOneShot();
        try {
          return await (await import('./run-command.ts')).runCommand(rest, out, err);
        } finally {
          endOneShot();
        }
      case 'serve':
        return await (await import('./serve.ts')).serveCommand(rest, out);
      case 'trace':
        return await (await import('./trace.ts')).traceCommand(rest, out);
      case 'sessions':
        return await (await import('./sessions.ts')).sessionsCommand(rest, out);
      case 'send':
        return await (await import('./send.ts')).sendCommand(rest, out, err);
      case 'chat':
        return await (await import('./chat.ts')).chatCommand(rest, out, err);
      case 'tasks':
        return await (await import('./tasks.ts')).tasksCommand(rest, out, err);
      case 'console':
        return await (await import('./console.ts')).consoleCommand(rest, out, err);
      case 'pack':
      case 'publish':
      case 'install':
      case 'pull':
        return await (await import('./package.ts')).packageCommand(cmd, rest, out);
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        out(HELP);
        return cmd === undefined ? 2 : 0;
      default:
        err(`mur: unknown command '${cmd}'\n\n${HELP}`);
        return 2;
    }
  } catch (e) {
    if (e instanceof UsageError) {
      err(`mur ${cmd}: ${e.message} (see mur ${cmd} --help)`);
      return 2;
    }
    if (isMurErrorList(e)) {
      err(`mur ${cmd}: ${e.errors.length} problem(s):`);
      for (const x of e.errors) err(`  ${x.format().replace(/\n/g, '\n  ')}`);
      return 1;
    }
    if (isMurError(e)) {
      err(`mur ${cmd}: ${e.format()}`);
      return 1;
    }
    err(`mur ${cmd}: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}

const invokedDirectly = process.argv[1] && /[\\/](main\.(ts|js)|mur)$/.test(process.argv[1]);
if (invokedDirectly || process.env.MUR_CLI === '1') {
  // First of all: the provider key leaves process.env before anything can be spawned, and every
  // secret the process was started with leaves what the kernel shows of it (process-guard.ts).
  redactProcessOutput();
  try {
    const warnings = protectStartupSecrets(takeInferenceKey());
    if (process.argv[2] === 'run' || process.argv[2] === 'serve') for (const w of warnings) console.error(`mur: ${w}`);
  } catch (e) {
    console.error(`mur: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
  main(process.argv.slice(2)).then((code) => process.exit(code));
}
