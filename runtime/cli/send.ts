/** `mur send <target> "text"`: one task to a capsule over A2A, its steps as they happen, its answer. */
import { helpText, parseArgs, UsageError, type FlagSpec } from './args.ts';
import { TARGET_FLAGS, TARGET_HELP, exitStatus, kubectlShortFlags, takeRepeated, targetOptions } from './remote-flags.ts';
import { RemoteProgress } from './remote-progress.ts';
import { openTarget } from '../client/open-target.ts';
import { userMessage } from '../client/message.ts';
import { cancelTask, sendAndFollow } from '../client/task-calls.ts';
import type { StepEvent } from '../client/stream-events.ts';

export const SEND_FLAGS: FlagSpec = {
  file: { type: 'string', help: 'attach a file as a file part (repeatable; sent inline, up to 700 KiB each)' },
  'context-id': { type: 'string', help: 'continue this conversation (default: a new one)' },
  'task-id': { type: 'string', help: 'answer this input-required task instead of starting one (with its --context-id)' },
  json: { type: 'boolean', help: 'print one JSON document (task id, state, answer, steps) instead of lines' },
  quiet: { type: 'boolean', help: 'print only the answer' },
  ...TARGET_FLAGS,
  help: { type: 'boolean', help: 'show this help' },
};

export const SEND_HELP = helpText(
  'mur send <target> "text" [--file FILE]... [flags]',
  `Sends a task to a capsule over A2A (the official SDK client: JSON-RPC, HTTP+JSON or gRPC, as
its agent card offers) and streams its progress in the lines mur run prints for a local task —
each inference turn (model, tokens, duration), each tool or shell call (✓ ok, ✗ error, a shell
call's command and exit code), each hook denial with its reason, the task's totals — and its
answer as it streams in.

${TARGET_HELP}

Exit status: 0 completed, 1 failed or rejected (or an error before the task ran), 2 usage,
3 input-required (the prompt is printed; answer with --task-id and --context-id, or use mur chat),
4 canceled. Ctrl-C cancels the task on the capsule.`,
  SEND_FLAGS,
);

export async function sendCommand(argv: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const { values: files, rest } = takeRepeated(kubectlShortFlags(argv), 'file');
  const { flags, positionals } = parseArgs(rest, SEND_FLAGS);
  if (flags.help) {
    out(SEND_HELP);
    return 0;
  }
  const [target, ...words] = positionals;
  if (!target) throw new UsageError('needs a target: an A2A URL or capsule/<name>');
  if (words.length === 0) throw new UsageError('needs the task text after the target');
  const json = Boolean(flags.json);
  const quiet = Boolean(flags.quiet) || json;
  const replyTo = flags['task-id'] as string | undefined;
  const contextId = flags['context-id'] as string | undefined;
  if (replyTo && !contextId) throw new UsageError("--task-id needs the task's --context-id too");
  // The message is built first: an unreadable --file fails before any connection is opened.
  const message = userMessage({ text: words.join(' '), files, ...(contextId ? { contextId } : {}), ...(replyTo ? { taskId: replyTo } : {}) });
  const open = await openTarget(targetOptions(target, flags, quiet ? undefined : (s) => err(s)));
  const steps: StepEvent[] = [];
  const progress = new RemoteProgress(open.label, out);
  // Ctrl-C cancels the task on the capsule (the stream then ends `canceled`, exit 4), as Ctrl-C
  // stops a local `mur run`; before the capsule has named the task it cuts the call off.
  let taskId: string | undefined = message.taskId || undefined;
  const abort = new AbortController();
  const onSigint = (): void => {
    if (taskId) void cancelTask(open.conn, taskId).catch(() => abort.abort());
    else abort.abort();
  };
  process.on('SIGINT', onSigint);
  try {
    const outcome = await sendAndFollow(
      open.conn,
      message,
      (e) => {
        if (e.kind === 'task') taskId = e.taskId;
        if (json) {
          if (e.kind !== 'chunk' && e.kind !== 'thinking') steps.push(e);
          return;
        }
        if (e.kind === 'chunk') return progress.chunk(e.text);
        // Every event goes through progress (it tells one turn's streamed text from the next).
        const line = progress.line(e);
        if (line !== undefined && !quiet) out(line);
      },
      abort.signal,
    );
    if (json) {
      out(JSON.stringify({ ...outcome, transport: open.conn.transport, steps }, null, 2));
      return exitStatus(outcome.state);
    }
    // A completed task's answer, less what its streamed chunks already printed.
    progress.finish(outcome.state === 'completed', outcome.answer);
    if (outcome.state === 'input-required') {
      err(`task ${outcome.taskId} needs input: ${outcome.statusText ?? ''}`);
      err(`  answer: mur send ${target} --task-id ${outcome.taskId} --context-id ${outcome.contextId} "…"   (or mur chat)`);
    } else if (outcome.state !== 'completed') {
      err(`task ${outcome.state}: ${outcome.statusText ?? ''}`);
    }
    return exitStatus(outcome.state);
  } finally {
    process.off('SIGINT', onSigint);
    await open.close();
  }
}
