/**
 * Bounds on push-notification configs (issue 38 §4): one caller made 310 configs on one task and
 * 100 of them turned each task event into 100 POSTs, an amplifier toward any allowed host. A task
 * holds at most `maxConfigsPerTask` configs; a caller at most `maxConfigsPerCaller` over its tasks
 * that can still push (unfinished tasks of this process: a final task sends nothing more, so its
 * configs stop counting); a webhook URL is at most `maxUrlLength` characters.
 */
import type { TaskPushNotificationConfig } from '@a2a-js/sdk';
import type { PushNotificationStore, ServerCallContext } from '@a2a-js/sdk/server';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { MurError } from '../../errors.ts';

export interface PushLimits {
  /** Configs one task may hold (a config set again under its id replaces it). Default 10. */
  maxConfigsPerTask?: number;
  /** Configs one caller may hold over its unfinished tasks. Default 100. */
  maxConfigsPerCaller?: number;
  /** Longest webhook URL, in characters. Default 2048. */
  maxUrlLength?: number;
}

export const PUSH_LIMIT_DEFAULTS = { maxConfigsPerTask: 10, maxConfigsPerCaller: 100, maxUrlLength: 2048 } as const satisfies Required<PushLimits>;

export class PushQuota {
  readonly limits: Required<PushLimits>;
  /** Per caller (owner key): config counts of its unfinished tasks. */
  private readonly open = new Map<string, Map<string, number>>();
  /** Per caller: the tail of its config changes, so two concurrent sets cannot both pass a bound. */
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(limits: PushLimits = {}) {
    const l: Required<PushLimits> = { ...PUSH_LIMIT_DEFAULTS };
    for (const k of Object.keys(PUSH_LIMIT_DEFAULTS) as Array<keyof PushLimits>) {
      const v = limits[k];
      if (v === undefined) continue;
      if (!Number.isInteger(v) || v < 0) {
        throw new MurError('E-A2A-040', `push limit ${k} must be a whole number ≥ 0, got ${String(v)}`, {
          hint: 'fix the value',
          location: { field: `push.limits.${k}` },
        });
      }
      l[k] = v;
    }
    this.limits = l;
  }

  /** Refuses a webhook URL over the length limit (before it is parsed or stored). */
  checkUrl(url: string): void {
    if (url.length > this.limits.maxUrlLength) {
      throw new RequestMalformedError(`push notification url is ${url.length} characters long; at most ${this.limits.maxUrlLength} are accepted [E-A2A-048]`);
    }
  }

  /** Configs the caller holds over its unfinished tasks. */
  callerCount(owner: string): number {
    let n = 0;
    for (const c of this.open.get(owner)?.values() ?? []) n += c;
    return n;
  }

  /** Refuses one more config for a caller at its bound (the config of a new task, sent with it). */
  checkCaller(owner: string, adding = 1): void {
    const held = this.callerCount(owner);
    if (held + adding > this.limits.maxConfigsPerCaller) {
      throw new RequestMalformedError(
        `this caller already holds ${held} push notification configs on its unfinished tasks; at most ${this.limits.maxConfigsPerCaller} are accepted (delete some, or wait for tasks to end) [E-A2A-047]`,
      );
    }
  }

  /**
   * Saves `cfg` on a task if the bounds allow it, one change per caller at a time. `open`: the
   * task can still push (its configs count toward the caller's bound).
   */
  save(store: PushNotificationStore, cfg: TaskPushNotificationConfig, context: ServerCallContext, owner: string, open: boolean): Promise<void> {
    return this.serial(owner, async () => {
      const held = await store.load(cfg.taskId, context);
      const replaces = cfg.id !== '' && held.some((c) => c.id === cfg.id);
      if (!replaces && held.length >= this.limits.maxConfigsPerTask) {
        throw new RequestMalformedError(
          `task ${cfg.taskId} already has ${held.length} push notification configs; at most ${this.limits.maxConfigsPerTask} per task (delete one, or set one again under its id to replace it) [E-A2A-046]`,
        );
      }
      if (open && !replaces) this.checkCaller(owner);
      await store.save(cfg.taskId, context, cfg);
      if (open) this.count(owner, cfg.taskId, held.length + (replaces ? 0 : 1));
    });
  }

  /** Deletes a config and counts the task's configs again. */
  delete(store: PushNotificationStore, taskId: string, configId: string | undefined, context: ServerCallContext, owner: string, open: boolean): Promise<void> {
    return this.serial(owner, async () => {
      await store.delete(taskId, context, configId);
      if (open) this.count(owner, taskId, (await store.load(taskId, context)).length);
    });
  }

  /** Records the config count of an unfinished task (a config saved with a new task). */
  count(owner: string, taskId: string, n: number): void {
    let tasks = this.open.get(owner);
    if (!tasks) this.open.set(owner, (tasks = new Map()));
    if (n > 0) tasks.set(taskId, n);
    else tasks.delete(taskId);
    if (tasks.size === 0) this.open.delete(owner);
  }

  /** A task ended: it pushes nothing more, so its configs stop counting toward its caller's bound. */
  ended(owner: string, taskId: string): void {
    if (this.open.get(owner)?.has(taskId)) this.count(owner, taskId, 0);
  }

  private serial<T>(owner: string, f: () => Promise<T>): Promise<T> {
    const run = (this.chains.get(owner) ?? Promise.resolve()).then(f, f);
    const tail = run.catch(() => undefined);
    this.chains.set(owner, tail);
    void tail.then(() => {
      if (this.chains.get(owner) === tail) this.chains.delete(owner);
    });
    return run;
  }
}
