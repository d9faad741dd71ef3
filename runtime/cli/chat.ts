/**
 * `mur chat <target>`: a conversation with a capsule in one context. Each line is a message; when
 * the capsule asks for input (`input-required`), the next line answers that task in place.
 */
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { helpText, parseArgs, UsageError, type FlagSpec } from './args.ts';
import { TARGET_FLAGS, TARGET_HELP, kubectlShortFlags, takeRepeated, targetOptions } from './remote-flags.ts';
import { RemoteProgress } from './remote-progress.ts';
import { openTarget } from '../client/open-target.ts';
import { userMessage } from '../client/message.ts';
import { cancelTask, sendAndFollow, type TaskOutcome } from '../client/task-calls.ts';
import { isMurError } from '../errors.ts';

export const CHAT_FLAGS: FlagSpec = {
  'context-id': { type: 'string', help: 'continue this conversation (default: a new one, printed at the start)' },
  file: { type: 'string', help: 'attach a file to the first message (repeatable)' },
  quiet: { type: 'boolean', help: 'print only the answers and prompts, no steps' },
  ...TARGET_FLAGS,
  help: { type: 'boolean', help: 'show this help' },
};

export const CHAT_HELP = helpText(
  'mur chat <target> [flags]',
  `An interactive conversation with a capsule: each line you type is a message in one A2A
context; the steps and the answer print as with mur send. When the capsule asks for input
(input-required), its question is printed after '?' and your next line answers that task.
Ctrl-C cancels the running task; Ctrl-D (end of input) or /exit ends the chat.

${TARGET_HELP}`,
  CHAT_FLAGS,
);

export async function chatCommand(argv: string[], out: (s: string) => void, err: (s: string) => void, input: Readable = process.stdin): Promise<number> {
  const { values: files, rest } = takeRepeated(kubectlShortFlags(argv), 'file');
  const { flags, positionals } = parseArgs(rest, CHAT_FLAGS);
  if (flags.help) {
    out(CHAT_HELP);
    return 0;
  }
  const [target, extra] = positionals;
  if (!target) throw new UsageError('needs a target: an A2A URL or capsule/<name>');
  if (extra !== undefined) throw new UsageError(`takes one target; type the messages after it starts (got ${JSON.stringify(extra)})`);
  const quiet = Boolean(flags.quiet);
  const open = await openTarget(targetOptions(target, flags, quiet ? undefined : (s) => err(s)));
  const tty = (input as { isTTY?: boolean }).isTTY === true;
  const rl = createInterface({ input, ...(tty ? { output: process.stdout, prompt: 'you> ' } : {}), terminal: tty });
  let contextId = flags['context-id'] as string | undefined;
  let waiting: TaskOutcome | undefined;
  let running: { taskId?: string } | undefined;
  let attach: string[] | undefined = files;
  // Ctrl-C cancels the running task (the stream then ends `canceled`); with none running it ends the chat.
  rl.on('SIGINT', () => {
    if (running?.taskId) void cancelTask(open.conn, running.taskId).catch(() => {});
    else rl.close();
  });
  out(
    `chatting with ${open.label} (${open.conn.card.name}) over ${open.conn.transport}${contextId ? `, context ${contextId}` : ''}; /exit or end of input ends it`,
  );
  try {
    if (tty) rl.prompt();
    for await (const raw of rl) {
      const text = raw.trim();
      if (text === '/exit') break;
      if (text === '') {
        if (tty) rl.prompt();
        continue;
      }
      const message = userMessage({
        text,
        ...(attach ? { files: attach } : {}),
        ...(contextId ? { contextId } : {}),
        ...(waiting ? { taskId: waiting.taskId } : {}),
      });
      attach = undefined;
      running = {};
      try {
        const progress = new RemoteProgress(open.label, out);
        const outcome = await sendAndFollow(open.conn, message, (e) => {
          if (e.kind === 'task') running = { taskId: e.taskId };
          if (e.kind === 'chunk') return progress.chunk(e.text);
          const line = progress.line(e);
          if (line !== undefined && !(quiet && !(e.kind === 'status' && e.state === 'input-required'))) out(line);
        });
        contextId = outcome.contextId;
        waiting = outcome.state === 'input-required' ? outcome : undefined;
        // A completed task's answer, less what its streamed chunks already printed.
        progress.finish(outcome.state === 'completed', outcome.answer);
        if (outcome.state === 'input-required' && quiet) out(`? ${outcome.statusText ?? ''}`);
        else if (outcome.state !== 'input-required' && outcome.state !== 'completed') err(`task ${outcome.state}: ${outcome.statusText ?? ''}`);
      } catch (e) {
        // One failed message does not end the conversation; the error says what happened.
        if (!isMurError(e)) throw e;
        err(`mur chat: ${e.format()}`);
        waiting = undefined;
      } finally {
        running = undefined;
      }
      if (tty) rl.prompt();
    }
  } finally {
    rl.close();
    await open.close();
  }
  return 0;
}
