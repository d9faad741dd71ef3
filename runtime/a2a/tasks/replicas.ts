/**
 * A2A across replicas: what one `mur serve` replica asks of the replica that runs a task, over the
 * replica bus (../store/replica-bus.ts, PostgreSQL LISTEN/NOTIFY). The store already answers `tasks/get` and
 * `ListTasks` on any replica; what only the runner can do goes to the runner:
 * - `tasks/cancel`: abort the task there (its executor, its provider call);
 * - the reply to an `input-required` task: the session waiting in request-input is there;
 * - a stream of the task's events (resubscribe, or message/stream with the reply): its events
 *   exist only there, so the runner subscribes locally and forwards each event.
 * The runner checks the caller's owner scope again, exactly as a local call would, and answers
 * with the SDK's own errors, rebuilt on the asking side so every transport maps them as usual.
 */
import type { Kysely } from 'kysely';
import type { Message, StreamResponse, Task } from '@a2a-js/sdk';
import { RequestMalformedError, TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { ReplicaBus } from '../store/replica-bus.ts';
import { RemoteError } from '../store/bus-envelope.ts';
import { failOrphans, runnerOf } from '../store/task-runners.ts';
import type { TaskMachine } from './tasks.ts';
import { taskNotFound, type TaskRecord } from './task-record.ts';

export interface RemoteReply {
  id: string;
  /** Owner scope key of the caller (tasks.ts ownerKey). */
  owner: string;
  message: Message;
  historyLength?: number;
  returnImmediately?: boolean;
}

/** What the request handler asks of other replicas (../handler/handler.ts `remote`). */
export interface RemoteTasks {
  /** The other, live replica that runs task `id`; undefined when none (a runner that died has its task failed first). */
  runner(id: string): Promise<string | undefined>;
  cancel(replica: string, id: string, owner: string): Promise<Task>;
  reply(replica: string, r: RemoteReply): Promise<Task>;
  replyStream(replica: string, r: RemoteReply): AsyncGenerator<StreamResponse, void, undefined>;
  subscribe(replica: string, id: string, owner: string): AsyncGenerator<StreamResponse, void, undefined>;
}

const ERRORS: Record<string, new (o: { message: string; metadata?: Record<string, string> }) => Error> = {
  TaskNotFoundError,
  TaskNotCancelableError,
  UnsupportedOperationError,
  RequestMalformedError,
};

/** A remote handler's error as the SDK error it was there (else as it is). */
function local(e: unknown): unknown {
  if (e instanceof RemoteError && ERRORS[e.remoteName]) {
    const data = e.data && typeof e.data === 'object' ? (e.data as Record<string, string>) : undefined;
    return new ERRORS[e.remoteName]!({ message: e.message, ...(data ? { metadata: data } : {}) });
  }
  return e;
}

async function* localErrors<T>(it: AsyncGenerator<T, void, undefined>): AsyncGenerator<T, void, undefined> {
  try {
    yield* it;
  } catch (e) {
    throw local(e);
  }
}

function isEnding(resp: StreamResponse): boolean {
  return resp.payload?.$case === 'statusUpdate';
}

/**
 * Serve this replica's tasks to the others on `bus`, and return the client side for the handler.
 * `reason` is the status text of a task whose runner died.
 */
// biome-ignore lint/suspicious/noExplicitAny: passed through to store/task-runners.ts, whose functions take the store's untyped Kysely<any>
export function replicate(machine: TaskMachine, bus: ReplicaBus, db: Kysely<any>, reason: string): RemoteTasks {
  const own = (id: string, owner: string): TaskRecord => {
    const rec = machine.findOwned(id, owner);
    if (!rec) throw taskNotFound(id);
    return rec;
  };
  /** Forward `rec`'s events to the asking replica until its stream ends (each ending event only once stored). */
  const forward = async (rec: TaskRecord, emit: (ev: unknown) => void, signal: AbortSignal, first: Task, go?: () => void): Promise<void> => {
    const sub = machine.subscribe(rec, undefined);
    signal.addEventListener('abort', () => sub.close(), { once: true });
    await rec.saving;
    emit({ payload: { $case: 'task', value: first } });
    go?.();
    for await (const resp of machine.events(rec, sub)) {
      if (isEnding(resp)) await rec.saving;
      emit(resp);
    }
  };

  bus.handle('cancel', async (p: { id: string; owner: string }) => {
    const rec = own(p.id, p.owner);
    machine.cancel(rec);
    await rec.saving;
    return machine.snapshot(rec);
  });
  bus.handle('reply', async (p: RemoteReply) => {
    const rec = own(p.id, p.owner);
    machine.replyTo(rec, p.message)();
    if (!p.returnImmediately) await machine.waitFor(rec, () => rec.final || rec.state === 'input-required');
    await rec.saving;
    return machine.snapshot(rec, p.historyLength);
  });
  bus.handleStream('reply', async (p: RemoteReply, emit, signal) => {
    const rec = own(p.id, p.owner);
    const go = machine.replyTo(rec, p.message);
    await forward(rec, emit, signal, machine.snapshot(rec, p.historyLength), go);
  });
  bus.handleStream('subscribe', async (p: { id: string; owner: string }, emit, signal) => {
    const rec = own(p.id, p.owner);
    if (rec.final) throw new UnsupportedOperationError(`task ${rec.id} is already ${rec.state}; use tasks/get for its result`);
    await forward(rec, emit, signal, machine.snapshot(rec));
  });

  return {
    async runner(id) {
      const replica = await runnerOf(db, id);
      if (!replica || replica === bus.id) return undefined;
      if (await bus.isAlive(replica)) return replica;
      await failOrphans(db, reason, { taskId: id, alive: bus.isAlive.bind(bus) });
      // Left waiting for input with a resume point, the task is not failed: this replica adopts it
      // (with any other such task of a runner that is gone) and takes the call itself.
      await machine.adoptWaiting();
      return undefined;
    },
    cancel: (replica, id, owner) => bus.call(replica, 'cancel', { id, owner }).catch((e: unknown) => Promise.reject(local(e))) as Promise<Task>,
    reply: (replica, r) => bus.call(replica, 'reply', r).catch((e: unknown) => Promise.reject(local(e))) as Promise<Task>,
    replyStream: (replica, r) => localErrors(bus.stream(replica, 'reply', r) as AsyncGenerator<StreamResponse, void, undefined>),
    subscribe: (replica, id, owner) => localErrors(bus.stream(replica, 'subscribe', { id, owner }) as AsyncGenerator<StreamResponse, void, undefined>),
  };
}
