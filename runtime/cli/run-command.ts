/** `mur run <capsule-dir>`: stage a capsule and run one task on this machine, printing each step. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import { helpText, parseArgs, type FlagSpec } from './args.ts';
import { stage } from '../compose/stage.ts';
import { printProgress } from './progress.ts';
import { transpileFirst } from './transpile-first.ts';
import { MurError, formatTaskFailure } from '../errors.ts';
import { agentRun, beforeTask, scriptLoaded } from './one-shot.ts';

export const RUN_FLAGS: FlagSpec = {
  task: { type: 'string', help: 'the task text (default: task.md in the capsule folder)' },
  'task-file': { type: 'string', help: 'read the task text from this file' },
  registry: { type: 'string', help: 'artifact registry folder (default: <capsule>/registry, $MURMUR_REGISTRY, ~/.murmur/registry)' },
  'work-root': { type: 'string', help: 'where session workdirs are created (default: $MURMUR_WORK_ROOT or ~/.murmur/sessions)' },
  'context-id': { type: 'string', help: 'context id of the task (default: a new one)' },
  quiet: { type: 'boolean', help: 'print only the result' },
  manifest: { type: 'string', help: "the capsule's murmur.yaml (the reference runtime's spelling; its folder is the capsule)" },
  help: { type: 'boolean', help: 'show this help' },
};

export const RUN_HELP = helpText(
  'mur run <capsule-dir> [--task TEXT | --task-file FILE] [flags]',
  'Stages the capsule (verifying every artifact against the registry and murmur.lock), runs one task\nthrough its agent loop, prints one line per step, then the result. Exit code 0 when the task\ncompleted, 1 when it did not (failed, max_turns_reached, spend_ceiling_reached, canceled).',
  RUN_FLAGS,
);

export async function runCommand(argv: string[], out: (s: string) => void = console.log, err: (s: string) => void = console.error): Promise<number> {
  const { flags, positionals } = parseArgs(argv, RUN_FLAGS);
  if (flags.help) {
    out(RUN_HELP);
    return 0;
  }
  let dir = positionals[0];
  if (flags.manifest !== undefined) {
    const mf = resolve(String(flags.manifest));
    if (basename(mf) !== 'murmur.yaml') {
      throw new MurError('E-CLI-003', `--manifest ${flags.manifest}: a capsule manifest is named murmur.yaml (its folder is the capsule)`, {
        hint: `rename it to ${join(dirname(mf), 'murmur.yaml')}, or pass the folder: mur run ${dirname(mf)}`,
      });
    }
    if (dir !== undefined && resolve(dir) !== dirname(mf))
      throw new MurError('E-CLI-003', `both a capsule folder (${dir}) and --manifest ${flags.manifest} given`, { hint: 'give one of them' });
    dir = dirname(mf);
  }
  if (!dir) throw new MurError('E-CLI-001', 'mur run needs a capsule folder', { hint: 'mur run examples/hello --task "…"' });
  const capsuleDir = resolve(dir);
  let text = flags.task as string | undefined;
  if (text === undefined && flags['task-file']) text = readFileSync(resolve(String(flags['task-file'])), 'utf8');
  if (text === undefined && existsSync(join(capsuleDir, 'task.md'))) text = readFileSync(join(capsuleDir, 'task.md'), 'utf8');
  if (text === undefined) throw new MurError('E-CLI-002', 'no task: pass --task, --task-file, or put a task.md in the capsule folder');

  const staged = await stage({ capsuleDir, registryDir: flags.registry as string | undefined, workRoot: flags['work-root'] as string | undefined });
  const quiet = Boolean(flags.quiet);
  if (!quiet) {
    out(`staged ${staged.manifest.name} ${staged.manifest.version}: ${staged.artifacts.length} artifact(s), murmur.lock ${staged.lock}`);
    out(`session ${staged.sessionId}  workdir ${staged.workdir.dir}`);
  }
  for (const n of staged.notices) err(`note: ${n}`);
  // A first run's transpiles, before the script host or the agent loop loads (host/transpile-ahead.ts).
  await transpileFirst(staged, quiet ? undefined : out);
  if (staged.manifest.kind === 'script') {
    // One task: the capsule on this thread when it can, else its workers one-shot (script-session.ts).
    const { runScriptCapsule } = await import('../script/script-session.ts');
    scriptLoaded();
    return await runScriptCapsule(staged, text, { out, err, quiet, beforeTask });
  }
  agentRun();
  // The agent loop, its MCP client and hooks are loaded for an agent capsule only: a script
  // capsule's one-shot run does without them (≈ 10 MiB of RSS: docs/script-capsules.md).
  const [{ openSession }, { instrument }] = await Promise.all([import('../compose/open.ts'), import('../telemetry/instrument.ts')]);
  const session = await openSession(staged);
  const telemetry = await instrument(session);
  const stop = quiet ? () => {} : printProgress(session.trace, out);
  const abort = new AbortController();
  const onSigint = (): void => abort.abort(new MurError('E-RUN-020', 'interrupted'));
  process.once('SIGINT', onSigint);
  let exitStatus = 'failed';
  try {
    const report = await session.runTask(
      {
        taskId: randomUUID(),
        contextId: (flags['context-id'] as string | undefined) ?? randomUUID(),
        text,
        source: 'task_md',
        origin: 'user',
        trust: 'trusted',
      },
      undefined,
      abort.signal,
    );
    exitStatus = report.exit === 'completed' ? 'ok' : report.exit;
    if (report.exit === 'completed') out(report.text ?? '');
    // A task that did not complete is a failure: stderr, with its code and fix hint.
    else err(formatTaskFailure(report.exit, report.reason, report.error));
    return report.exit === 'completed' ? 0 : 1;
  } finally {
    process.off('SIGINT', onSigint);
    await session.close(exitStatus);
    await telemetry.shutdown();
    stop();
    if (!quiet) {
      out(`trace: ${staged.workdir.trace}`);
      suggestPrune(dirname(staged.workdir.dir), out);
    }
  }
}

/** Session workdirs pile up under the work root: past a few hundred, say how to clear them. */
function suggestPrune(root: string, out: (s: string) => void): void {
  try {
    const n = readdirSync(root).filter((f) => f.startsWith('ses_')).length;
    if (n > 200) out(`${n} session workdirs in ${root}; \`mur sessions prune\` removes those idle over 7 days`);
  } catch {
    // only a hint
  }
}
