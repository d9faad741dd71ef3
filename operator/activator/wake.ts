/**
 * Asking the operator to wake a Capsule: a core/v1 Event on it, reason `WakeRequested`, source
 * `capsule-activator`, which the operator watches by field selector (operator/controller/). An
 * Event, not a write to the Capsule or its Deployment: the activator may create Events and nothing
 * else, so a compromised activator can at worst wake capsules and write Events. At most one per Capsule per second:
 * a burst of held requests is one wake, and a wake the operator missed is asked for again by the
 * next request after that second.
 */
import type { Capsule } from '../api/types.ts';
import { capsuleEvent } from '../kube/capsule-event.ts';
import type { KubeClient } from '../kube/client.ts';

export const WAKE_REASON = 'WakeRequested';
export const ACTIVATOR_COMPONENT = 'capsule-activator';
const MIN_INTERVAL_MS = 1000;

export class Waker {
  private readonly last = new Map<string, number>();

  constructor(
    private readonly client: KubeClient,
    private readonly identity: string,
    private readonly log: (m: string) => void,
    private readonly requested: () => void = () => {},
  ) {}

  /** Creates the Event unless one was created for this Capsule less than a second ago. True when it did. */
  async wake(c: Capsule, binding: string): Promise<boolean> {
    const key = `${c.metadata.namespace}/${c.metadata.name}`;
    const now = Date.now();
    const prev = this.last.get(key);
    if (prev !== undefined && now - prev < MIN_INTERVAL_MS) return false;
    this.last.set(key, now);
    if (this.last.size > 10_000) this.last.delete(this.last.keys().next().value as string);
    const at = new Date(now).toISOString();
    try {
      await this.client.create(
        capsuleEvent(c, {
          reason: WAKE_REASON,
          message: `a ${binding} request is waiting for the capsule to wake`,
          type: 'Normal',
          component: ACTIVATOR_COMPONENT,
          instance: this.identity,
          at,
        }),
      );
      this.requested();
      return true;
    } catch (e) {
      // Let the next request ask again at once: this one still waits for its bound.
      this.last.delete(key);
      this.log(`wake event for ${key} failed: ${(e as Error).message}`);
      return false;
    }
  }
}
