/**
 * `mur serve`, once the capsule is staged and its components transpiled (serve.ts): the store, the
 * session (an agent capsule's loop or a script capsule's runner), the A2A server and /metrics, until
 * the process is told to stop. Loaded by serve.ts only then (host/transpile-ahead.ts says why).
 */
import type { Server } from 'node:http';
import { http } from '../builtins.ts';
import { defaultWorkRoot, openSession } from '../compose/open.ts';
import { taskExecutor } from '../compose/a2a-bridge.ts';
import { startA2AServer, skillsFromTools, createAuthenticator, type A2AServer, type A2AServerOptions, type Authenticator } from '../a2a/server/server.ts';
import type { TokenVerifier } from '../a2a/server/auth.ts';
import { printProgress } from './progress.ts';
import type { StartupClock } from './startup-clock.ts';
import { planServeAuth, type ServeAuthPlan } from './serve-auth.ts';
import { startPagesGo } from './serve-start-pages.ts';
import type { ConnectionLimits } from '../a2a/server/connection-limits.ts';
import type { PushLimits } from '../a2a/peers/push-limits.ts';
import { MurError } from '../errors.ts';
import { describeRelease, onReleased } from '../memory.ts';
import { instrument } from '../telemetry/instrument.ts';
import { renderMetrics } from '../telemetry/metrics-endpoint.ts';
import { runtimeMetrics } from '../telemetry/metrics.ts';
import { ActivityTracker } from '../telemetry/activity.ts';
import { failUnfinished, openStore, type DurableStore } from '../a2a/store/store.ts';
import { describeConnectError } from '../a2a/store/store-connect.ts';
import { ReplicaBus } from '../a2a/store/replica-bus.ts';
import { claimingStore } from '../a2a/store/task-runners.ts';
import { resumeStore } from '../a2a/store/resume-points.ts';
import { replicate } from '../a2a/tasks/replicas.ts';
import type { TaskMachine } from '../a2a/tasks/tasks.ts';
import type { TaskExecutor } from '../a2a/core/executor.ts';
import type { ConversationStore } from '../inference/conversation-store.ts';
import type { StagedCapsule } from '../session/stage.ts';

const RESTARTED = 'the runtime restarted (mur serve stopped without finishing this task: killed, crashed or its node lost); send the message again';

/** What serve.ts read and checked before staging, for the serving part. */
export interface ServeContext {
  flags: Record<string, unknown>;
  out: (s: string) => void;
  clock: StartupClock;
  host: string;
  port: number;
  publicUrl: string;
  authPlan: ServeAuthPlan;
  grpcPort: number | 'same' | undefined;
  limits: { connections: ConnectionLimits; push: PushLimits };
}

/** Serves the staged capsule until it stops (drain, single task done, session ended): its exit code. */
export async function serveStaged(staged: StagedCapsule, ctx: ServeContext): Promise<number> {
  const { flags, out, clock, host, port, authPlan, grpcPort, limits } = ctx;
  // The Kubernetes client (TokenReview) is loaded only under --token-review: evaluating it cost
  // every start (157 ms of a 1.6 s CPU profile of the image's start), also for capsules served with API keys.
  const reviewer = flags['token-review'] === true ? (await import('../a2a/server/token-review.ts')).tokenReviewVerifier : undefined;
  const { auth, notice } = authenticatorOf(authPlan, ctx.publicUrl, reviewer);
  const m = staged.manifest;
  const opened = await openServeStore(flags, m.name, out);
  clock.mark('store');
  const store = opened?.store;
  const bus = opened?.bus;
  let busLost: ((e: Error) => void) | undefined;
  bus?.onLostSet((e) => busLost?.(e));
  const { executor, skills, close, onEnded, warmUp } = await openServed(staged, {
    quiet: Boolean(flags.quiet),
    out,
    ...(store ? { conversations: store.conversations } : {}),
  });
  clock.mark('session');
  const activity = new ActivityTracker(); // what keeps the capsule awake: capsule_idle_seconds, the operator's sleep signal
  const a2a = await startA2AServer({
    activity,
    card: { name: m.name, version: m.version, description: `${m.name} capsule`, skills },
    executor,
    acceptance: m.lifecycle.taskAcceptance,
    queueDepth: m.lifecycle.queueDepth,
    inputTimeoutSecs: m.lifecycle.inputTimeoutSecs,
    host,
    port,
    publicUrl: flags['public-url'] as string | undefined,
    auth,
    // Webhooks may only go where the capsule itself may connect; a SQLite file is this process's alone.
    push: { allow: m.capabilities.network.allow, limits: limits.push, ...(store ? { store: store.push, local: store.kind === 'sqlite' } : {}) },
    limits: limits.connections,
    ...storeOptions(opened, m.kind),
    ...(grpcPort !== undefined ? { grpcPort } : {}),
  });
  watchServing(m.name, a2a, activity, out);
  let metrics: Server | undefined;
  const metricsPort = Number(flags['metrics-port']);
  let endedStatus: string | undefined;
  // Ready while this pod can still take tasks: not after a single capsule's one task, nor once the
  // session has ended, so a Service stops routing to a pod that would only refuse.
  if (metricsPort > 0) metrics = await startMetricsServer(host, metricsPort, () => a2a.acceptsMore() && endedStatus === undefined);
  clock.mark('servers');
  const warmedUp = warmUp?.();
  // One write: whoever waits for the "serving" line also has the bindings and the authentication.
  out(
    `serving ${m.name} ${m.version} at ${a2a.url} (session ${staged.sessionId}, acceptance ${m.lifecycle.taskAcceptance})\n` +
      `A2A bindings: JSON-RPC ${a2a.url}, HTTP+JSON ${a2a.restUrl ?? '-'}, gRPC ${a2a.grpcAddress ?? '-'}; ${notice}`,
  );
  out(clock.line());
  // The start is over once the warm-up is (a script capsule has none): its pages of the binary go,
  // unless the capsule has been called meanwhile (serve-start-pages.ts).
  void startPagesGo(warmedUp, activity, flags.quiet ? undefined : out);
  // Once per idle period (runtime/memory.ts): what went idle, and what the process gave back.
  if (!flags.quiet) {
    onReleased((r) => out(describeRelease(r)));
  }

  const drainMs = Math.max(0, Number(flags['drain-secs'])) * 1000;
  const stopped = new Promise<string>((resolve) => {
    // Graceful drain: /readyz 503 and new tasks refused (retryable) at once; running tasks get the
    // drain budget, every open stream its final event; then the usual close, exit 0.
    const drain = (sig: string) => {
      out(`${sig}: draining (no new tasks; up to ${drainMs / 1000} s for running ones)`);
      void a2a.drain(drainMs).then((failed) => {
        if (failed) out(`drain budget ran out: ${failed} unfinished task(s) failed`);
        if (a2a.waitingForInput()) out(`${a2a.waitingForInput()} task(s) waiting for input left for the next start (resume points stored)`);
        resolve(endedStatus ?? 'ok');
      });
    };
    process.once('SIGTERM', () => drain('SIGTERM'));
    // Without its bus connection this replica has lost its identity: the others may already have
    // failed its tasks as orphans, so it stops (and its pod restarts) rather than run on unseen.
    busLost = (e) => {
      out(`the replica bus lost its store connection (${e.message}); stopping [E-STORE-005]`);
      endedStatus = 'failed';
      resolve('failed');
    };
    process.once('SIGINT', () => drain('SIGINT'));
    // The single task's answer must reach its caller before the capsule exits: wait until the
    // server is idle, then give the response a moment to flush.
    if (m.lifecycle.taskAcceptance === 'single')
      void a2a.done
        .then(() => a2a.idle())
        .then(() => new Promise((r) => setTimeout(r, 1000)))
        .then(() => resolve(endedStatus ?? 'ok'));
    if (m.lifecycle.taskAcceptance === 'none') resolve('ok');
    // An on-compaction error ends the session: answer the task that hit it, then stop serving.
    onEnded?.((status) => {
      endedStatus = status;
      out(`session ended (${status}): an on-compaction hook failed; stopping`);
      void a2a
        .idle()
        .then(() => new Promise((r) => setTimeout(r, 1000)))
        .then(() => resolve(status));
    });
  });
  const exitStatus = await stopped;
  await a2a.close();
  metrics?.close();
  await bus?.close();
  await store?.close();
  await close(exitStatus);
  return exitStatus === 'ok' ? 0 : 1;
}

/**
 * The capsule's session behind the A2A front door. An agent capsule runs its tasks through the
 * agent loop; a script capsule through its own `murmur:capsule/run` component. Either way the
 * A2A front door is the same.
 */
async function openServed(
  staged: StagedCapsule,
  o: { quiet: boolean; out: (s: string) => void; conversations?: ConversationStore },
): Promise<{
  executor: TaskExecutor;
  skills: ReturnType<typeof skillsFromTools>;
  close: (status: string) => Promise<void>;
  onEnded?: (listener: (status: string) => void) => void;
  /** Resolves once the warm-up is done (never rejects). */
  warmUp?: () => Promise<void>;
}> {
  const m = staged.manifest;
  if (m.kind === 'script') {
    const { ScriptSession } = await import('../script/script-session.ts');
    const { scriptTaskExecutor } = await import('../script/serve.ts');
    const script = await ScriptSession.open(staged);
    const telemetry = await instrument(script);
    return {
      executor: scriptTaskExecutor(script),
      skills: skillsFromTools(
        staged.artifacts.filter((a) => a.runtime === 'tool' && a.name !== m.name).map((a) => ({ name: a.name, description: a.manifest.description })),
      ),
      close: async (status) => {
        await script.close(status);
        await telemetry.shutdown();
      },
    };
  }
  const session = await openSession(staged, { deferWarmUp: true, ...(o.conversations ? { conversations: o.conversations } : {}) });
  const telemetry = await instrument(session);
  if (!o.quiet) printProgress(session.trace, o.out);
  return {
    executor: taskExecutor(session),
    skills: skillsFromTools(session.toolInventory()),
    onEnded: (listener) => session.onEnded((e) => listener(e.exitStatus)),
    close: async (status) => {
      await session.close(status);
      await telemetry.shutdown();
    },
    // The driver's and tools' workers and the token encoder are started once the servers listen,
    // in the background, not when the first task arrives (which waits for whatever is still
    // starting) and not before: on the pod's two or so cores they compete with the start itself
    // (compiling a 12 MB driver, booting worker threads) and held up /readyz (docs/operator.md).
    warmUp: () => session.warmUp(staged.artifacts.filter((a) => a.manifest.runtime === 'tool' && a.wasmPath)),
  };
}

/**
 * The durable store (runtime/a2a/store/store.ts): `--store`, else $MURMUR_STORE, else a SQLite file next
 * to the session workdirs (`<work root>/<capsule>.store.db`, on the session volume in a cluster), so
 * a restarted `mur serve` of the same capsule finds its tasks. `memory` keeps them in memory only.
 * On PostgreSQL the store may be shared by several replicas: this one joins the replica bus
 * (replica-bus.ts) first, so the sweep fails only the tasks of replicas that are gone.
 * Tasks left unfinished by a previous process are failed here, before the first request.
 */
async function openServeStore(
  flags: Record<string, unknown>,
  capsule: string,
  out: (s: string) => void,
): Promise<{ store: DurableStore; bus?: ReplicaBus } | undefined> {
  const workRoot = (flags.workdir as string | undefined) ?? defaultWorkRoot(process.env);
  const given = (flags.store as string | undefined) ?? process.env.MURMUR_STORE;
  const value = given ?? `sqlite:${workRoot}/${capsule}.store.db`;
  if (value === 'memory') return undefined;
  let store: DurableStore;
  try {
    store = await openStore(value, undefined, {
      onRetry: (r) => out(`store: cannot connect yet (${describeConnectError(r.error)}); attempt ${r.attempt + 1} in ${(r.delayMs / 1000).toFixed(2)} s`),
    });
  } catch (e) {
    // Only the default gives way, and says so: a store the operator asked for is never swapped.
    if (given !== undefined || !(e instanceof MurError) || e.code !== 'E-STORE-004') throw e;
    out(`store: memory (tasks and conversations do not survive a restart): ${e.message} [E-STORE-004]`);
    return undefined;
  }
  let bus: ReplicaBus | undefined;
  if (store.kind === 'postgres') {
    try {
      bus = await ReplicaBus.open(value.trim());
    } catch (e) {
      await store.close();
      throw e;
    }
  }
  const failed = await failUnfinished(store, RESTARTED, bus ? (r) => bus.isAlive(r) : undefined);
  out(
    `store: ${store.kind} ${store.where} (opened in ${store.openMs.toFixed(1)} ms${failed ? `; ${failed} unfinished task(s) from before the restart marked failed` : ''}${bus ? `; replica ${bus.id}` : ''})`,
  );
  return { store, ...(bus ? { bus } : {}) };
}

/**
 * The gauges of the serving capsule read at scrape time: tasks waiting for input, and how long it
 * has been idle; and the line saying how many waiting tasks it adopted from a stopped process.
 */
function watchServing(capsule: string, a2a: A2AServer, activity: ActivityTracker, out: (s: string) => void): void {
  runtimeMetrics().watchWaitingForInput(capsule, () => a2a.waitingForInput());
  runtimeMetrics().watchIdle(capsule, activity);
  if (a2a.adopted) out(`${a2a.adopted} task(s) left waiting for input before the restart: a reply resumes each`);
}

/**
 * What the A2A server keeps in the durable store: the tasks (each claimed for its replica on a
 * shared store), the calls between replicas, and the resume points of tasks waiting for input.
 */
/**
 * How long a `working` state may wait for its write to the SQLite store (task-saves.ts): longer
 * than a short task, so its end writes it along, and short beside a task a person waits on.
 */
const WORKING_SAVE_DELAY_MS = 500;

function storeOptions(opened: { store: DurableStore; bus?: ReplicaBus } | undefined, kind: StagedCapsule['manifest']['kind']): Partial<A2AServerOptions> {
  if (!opened) return {};
  const { store, bus } = opened;
  return {
    taskStore: bus ? claimingStore(store.tasks, store.db, bus.id) : store.tasks,
    // The SQLite file is this process's alone: a running task's `working` state waits up to
    // WORKING_SAVE_DELAY_MS for its write, which the task's next write (its end) usually takes along.
    ...(store.kind === 'sqlite' ? { workingSaveDelayMs: WORKING_SAVE_DELAY_MS } : {}),
    ...(bus ? { replicate: (machine: TaskMachine) => replicate(machine, bus, store.db, RESTARTED) } : {}),
    // An agent capsule's task waiting for input outlives a stop (docs/a2a.md "Restart"); a script
    // capsule's run cannot be rebuilt, so its waiting task fails as the process stops.
    ...(kind !== 'script' ? { resumePoints: resumeStore(store.db, bus ? { replica: bus.id, alive: (r) => bus.isAlive(r) } : undefined) } : {}),
  };
}

/** Prometheus /metrics (runtime/telemetry) and health endpoints, on their own port. */
async function startMetricsServer(host: string, port: number, ready: () => boolean): Promise<Server> {
  const srv = http.createServer(async (req, res) => {
    if (req.url === '/healthz') {
      res.end('ok');
      return;
    }
    if (req.url === '/readyz') {
      if (ready()) res.end('ok');
      else {
        res.statusCode = 503;
        res.end('not accepting tasks');
      }
      return;
    }
    if (req.url === '/metrics') {
      const { contentType, body } = await renderMetrics();
      res.setHeader('content-type', contentType);
      res.end(body);
      return;
    }
    res.statusCode = 404;
    res.end('not found');
  });
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(port, host, resolve);
  });
  return srv;
}

/**
 * Who may call (serve-auth.ts decides: API keys, ServiceAccount tokens, anonymous callers), as the
 * authenticator the A2A server checks every request with, and the start notice.
 */
export function serveAuth(
  flags: Record<string, unknown>,
  host: string,
  publicUrl: string,
  tokenReviewVerifier?: (o: { audience: string }) => TokenVerifier,
): { auth: Authenticator; notice: string } {
  return authenticatorOf(planServeAuth(flags, host, publicUrl), publicUrl, tokenReviewVerifier);
}

function authenticatorOf(
  plan: ServeAuthPlan,
  publicUrl: string,
  tokenReviewVerifier?: (o: { audience: string }) => TokenVerifier,
): { auth: Authenticator; notice: string } {
  if (plan.tokenReview && !tokenReviewVerifier)
    throw new Error('serveAuth: --token-review needs the TokenReview verifier (runtime/a2a/server/token-review.ts)');
  return {
    auth: createAuthenticator({
      apiKeys: plan.apiKeys,
      ...(plan.tokenReview && tokenReviewVerifier ? { serviceAccounts: tokenReviewVerifier({ audience: publicUrl }) } : {}),
      anonymous: plan.anonymous,
      trustedCallers: plan.trustedCallers,
    }),
    notice: plan.notice,
  };
}
