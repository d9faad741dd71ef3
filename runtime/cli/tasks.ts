/** `mur tasks <target> list|get|cancel`: the caller's own tasks on a capsule. */
import { MurError } from '../errors.ts';
import { helpText, parseArgs, UsageError, type FlagSpec } from './args.ts';
import { TARGET_FLAGS, TARGET_HELP, kubectlShortFlags, targetOptions } from './remote-flags.ts';
import { openTarget } from '../client/open-target.ts';
import { cancelTask, getTask, listTasks, type TaskOutcome } from '../client/task-calls.ts';
import type { TaskState } from '../a2a/core/executor.ts';

export const TASKS_FLAGS: FlagSpec = {
  'context-id': { type: 'string', help: 'list: only this conversation' },
  state: { type: 'string', help: 'list: only tasks in this state (working, input-required, completed, failed, canceled, …)' },
  'page-size': { type: 'number', help: "list: tasks per page (1–100, the capsule's default 50)" },
  'page-token': { type: 'string', help: 'list: the next page (printed after a full page)' },
  json: { type: 'boolean', help: 'print JSON' },
  ...TARGET_FLAGS,
  help: { type: 'boolean', help: 'show this help' },
};

export const TASKS_HELP = helpText(
  'mur tasks <target> list | get <task-id> | cancel <task-id> [flags]',
  `Your tasks on a capsule (a capsule shows each caller only its own): list them newest first,
read one (state, answer, status message), or cancel one that is queued, working or waiting
for input.

${TARGET_HELP}`,
  TASKS_FLAGS,
);

const STATES = new Set<TaskState>(['submitted', 'working', 'input-required', 'completed', 'failed', 'rejected', 'canceled']);

function line(t: TaskOutcome): string {
  const detail = t.state === 'completed' ? t.answer : t.statusText;
  return `${t.taskId}  ${t.state.padEnd(14)} ${t.contextId}${detail ? `  ${detail.replace(/\s+/g, ' ').slice(0, 80)}` : ''}`;
}

export async function tasksCommand(argv: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const { flags, positionals } = parseArgs(kubectlShortFlags(argv), TASKS_FLAGS);
  if (flags.help) {
    out(TASKS_HELP);
    return 0;
  }
  const [target, sub, id] = positionals;
  if (!target) throw new UsageError('needs a target: an A2A URL or capsule/<name>');
  if (sub !== 'list' && sub !== 'get' && sub !== 'cancel') {
    throw new MurError('E-CLI-041', `mur tasks: ${sub === undefined ? 'no subcommand' : `unknown subcommand '${sub}'`}`, {
      hint: 'mur tasks <target> list | get <task-id> | cancel <task-id>',
    });
  }
  if (sub !== 'list' && !id) throw new MurError('E-CLI-041', `mur tasks ${sub} needs a task id`, { hint: `mur tasks ${target} list shows them` });
  const state = flags.state as string | undefined;
  if (state !== undefined && !STATES.has(state as TaskState))
    throw new UsageError(`--state must be one of ${[...STATES].join(', ')}, got ${JSON.stringify(state)}`);
  const json = Boolean(flags.json);
  const open = await openTarget(targetOptions(target, flags, json ? undefined : (s) => err(s)));
  try {
    if (sub === 'list') {
      const r = await listTasks(open.conn, {
        ...(flags['context-id'] ? { contextId: String(flags['context-id']) } : {}),
        ...(state ? { state: state as TaskState } : {}),
        ...(flags['page-size'] !== undefined ? { pageSize: Number(flags['page-size']) } : {}),
        ...(flags['page-token'] ? { pageToken: String(flags['page-token']) } : {}),
      });
      if (json) out(JSON.stringify(r, null, 2));
      else {
        for (const t of r.tasks) out(line(t));
        if (r.tasks.length === 0) out('(no tasks)');
        if (r.nextPageToken) out(`more: --page-token ${r.nextPageToken}`);
      }
      return 0;
    }
    const t = sub === 'get' ? await getTask(open.conn, id!) : await cancelTask(open.conn, id!);
    if (json) out(JSON.stringify(t, null, 2));
    else {
      out(line(t));
      if (sub === 'get' && t.state === 'completed' && t.answer !== undefined) out(t.answer);
    }
    return 0;
  } finally {
    await open.close();
  }
}
