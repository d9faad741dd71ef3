/**
 * What the controller tells users: a Capsule's status with its Warning and Normal Events, a Hook's
 * status, and the NamespaceNotWatched Event of a Capsule outside the watched namespaces. Each is
 * written only when something changed.
 */
import type { Capsule, Hook } from '../api/types.ts';
import { isConflict } from '../kube/client.ts';
import { capsuleEvent } from '../kube/capsule-event.ts';
import { keyOf, type Informer } from '../kube/informer.ts';
import type { OwnedEntry } from '../reconcile/owned-cache.ts';
import { computeHookStatus, sameHookStatus } from '../reconcile/hook-status.ts';
import { computeStatus, runtimeExit, sameStatus, type PodLike, type SleepStatus } from '../reconcile/status.ts';
import { FIELD_MANAGER } from '../translate/builders/common.ts';
import { PROBLEM_CODES, type Problem, type TranslateResult } from '../translate/index.ts';
import type { WriteContext } from './apply.ts';
import { notWatchedEvent } from './unwatched.ts';

export interface StatusContext extends WriteContext {
  /** This operator replica, as the Events' reporting instance. */
  identity: string;
  log: (msg: string) => void;
}

/** Seconds precision, as Kubernetes writes times. */
const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * A Capsule's status from its translate result, its Deployment and its pods; Events for new
 * problems and for the transitions a user waits for. The written Capsule goes into `capsules`.
 */
export async function reportCapsule(
  ctx: StatusContext,
  capsules: Informer<Capsule>,
  c: Capsule,
  r: TranslateResult,
  deployment: OwnedEntry | undefined,
  pods: PodLike[],
  sleep?: SleepStatus,
): Promise<void> {
  const status = computeStatus(c, r, deployment, now(), runtimeExit(pods, r.configHash), sleep);
  if (sameStatus(c.status, status)) return;
  const prevDegraded = c.status?.conditions?.find((x) => x.type === 'Degraded');
  const nowDegraded = status.conditions?.find((x) => x.type === 'Degraded');
  if (r.problems.length && (prevDegraded?.reason !== nowDegraded?.reason || prevDegraded?.message !== nowDegraded?.message)) {
    for (const p of r.problems) await event(ctx, c, p);
  }
  const out = await ctx.client.mergePatchStatus<Capsule>(c, status);
  ctx.metrics.writes.inc({ verb: 'status' });
  capsules.offer(out);
  // Normal events for the transitions a user waits for.
  const prevReady = c.status?.conditions?.find((x) => x.type === 'Ready');
  const nowReady = status.conditions?.find((x) => x.type === 'Ready');
  if (nowReady?.status === 'True' && prevReady?.status !== 'True')
    await event(ctx, c, { reason: nowReady.reason, message: `Capsule is ready: ${nowReady.message}` }, 'Normal');
  if (!r.problems.some((p) => p.fatal) && status.configHash !== c.status?.configHash) {
    await event(
      ctx,
      c,
      { reason: 'Applied', message: `configuration ${status.configHash} applied (ConfigMap, Service, ServiceAccount, NetworkPolicies, Deployment)` },
      'Normal',
    );
  }
}

/** A Hook's status: its contract accepted or not, and the Capsules that use it (`usedBy`). */
export async function reportHook(ctx: StatusContext, hooks: Informer<Hook>, h: Hook, usedBy: string[]): Promise<void> {
  const status = computeHookStatus(h, usedBy, now());
  if (sameHookStatus(h.status, status)) return;
  await ctx.beforeWrite?.(h);
  const out = await ctx.client.mergePatchStatus<Hook>(h, status);
  ctx.metrics.writes.inc({ verb: 'status' });
  hooks.offer(out);
}

/** The NamespaceNotWatched Event of a Capsule outside the watched `namespaces`, once per Capsule uid. */
export async function tellUnwatched(ctx: StatusContext, c: Capsule, namespaces: string[]): Promise<void> {
  try {
    await ctx.client.create(notWatchedEvent(c, namespaces, ctx.identity, new Date()));
    ctx.metrics.writes.inc({ verb: 'event' });
  } catch (e) {
    if (!isConflict(e)) throw e; // 409: already told
  }
}

/** An Event of a sleep move on the Capsule (Sleeping, Waking, SleepDeferred: controller/sleep.ts). */
export function sleepEvent(ctx: StatusContext, c: Capsule, reason: string, message: string, type: 'Warning' | 'Normal' = 'Normal'): Promise<void> {
  return event(ctx, c, { reason, message }, type);
}

/** An Event on the Capsule; a problem's message carries its stable code. A failed one is logged, not retried. */
async function event(
  ctx: StatusContext,
  c: Capsule,
  p: Pick<Problem, 'reason' | 'message'> | { reason: string; message: string },
  type: 'Warning' | 'Normal' = 'Warning',
): Promise<void> {
  const code = (PROBLEM_CODES as Record<string, string | undefined>)[p.reason];
  const at = now();
  try {
    await ctx.client.create(
      capsuleEvent(c, {
        reason: p.reason,
        message: code ? `${p.message} [${code}]` : p.message,
        type,
        component: FIELD_MANAGER,
        instance: ctx.identity,
        at,
      }),
    );
    ctx.metrics.writes.inc({ verb: 'event' });
  } catch (e) {
    ctx.log(`event for ${keyOf(c)} failed: ${(e as Error).message}`);
  }
}
