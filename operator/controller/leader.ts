/**
 * Leader election on a coordination.k8s.io/v1 Lease (client-go's algorithm): a candidate takes the
 * Lease when it is free or when its holder has not renewed it for leaseDuration as observed by
 * this process's own clock (no cross-node clock comparison); the holder renews every retryPeriod
 * and steps down if it cannot renew within renewDeadline. Writes use the Lease resourceVersion, so
 * two candidates can never both win. On graceful shutdown the holder releases the Lease.
 */
import type { KubeObject } from '../api/types.ts';
import { isConflict, isNotFound, type KubeClient } from '../kube/client.ts';

export interface LeaderOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log?: (msg: string) => void;
}

interface Lease extends KubeObject {
  spec: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string; leaseTransitions?: number };
}

/** MicroTime: RFC 3339 with microseconds. */
const microTime = (d = new Date()): string => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

export class LeaderElector {
  private leading = false;
  private stopped = false;
  private observed: { rv: string; holder: string; at: number } | undefined;
  private lastRenew = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly lease: number;
  private readonly deadline: number;
  private readonly retry: number;
  private loop: Promise<void> | undefined;
  transitions = 0;
  /** Acquire-or-renew attempts made (tests wait for attempts instead of sleeping). */
  attempts = 0;

  constructor(
    private readonly client: KubeClient,
    private readonly o: LeaderOptions,
  ) {
    this.lease = o.leaseDurationMs ?? 15_000;
    this.deadline = o.renewDeadlineMs ?? 10_000;
    this.retry = o.retryPeriodMs ?? 2_000;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  private path(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${this.o.namespace}/leases/${this.o.name}`;
  }

  /** One acquire-or-renew attempt; true when we hold the Lease afterwards. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = new Date();
    const cur = await this.client.get<Lease>(this.path());
    const spec = {
      holderIdentity: this.o.identity,
      leaseDurationSeconds: Math.max(1, Math.round(this.lease / 1000)),
      renewTime: microTime(now),
    };
    if (!cur) {
      try {
        await this.client.create({
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.o.name, namespace: this.o.namespace },
          spec: { ...spec, acquireTime: microTime(now), leaseTransitions: 0 },
        });
        return true;
      } catch (e) {
        if (isConflict(e) || (e as { status?: number }).status === 409) return false;
        throw e;
      }
    }
    const holder = cur.spec.holderIdentity ?? '';
    const rv = cur.metadata.resourceVersion ?? '';
    if (!this.observed || this.observed.rv !== rv) this.observed = { rv, holder, at: Date.now() };
    const expired = Date.now() > this.observed.at + (cur.spec.leaseDurationSeconds ?? 15) * 1000;
    if (holder && holder !== this.o.identity && !expired) return false;
    const mine = holder === this.o.identity;
    const next: Lease = {
      ...cur,
      spec: {
        ...cur.spec,
        ...spec,
        acquireTime: mine ? (cur.spec.acquireTime ?? microTime(now)) : microTime(now),
        leaseTransitions: (cur.spec.leaseTransitions ?? 0) + (mine ? 0 : 1),
      },
    };
    try {
      const out = await this.client.replace<Lease>(next);
      this.observed = { rv: out.metadata.resourceVersion ?? '', holder: this.o.identity, at: Date.now() };
      return true;
    } catch (e) {
      if (isConflict(e) || isNotFound(e)) return false;
      throw e;
    }
  }

  /** Runs until stop(): calls onStart when leadership is won and onStop when it is lost. */
  start(onStart: () => void, onStop: () => void): void {
    const tick = async (): Promise<void> => {
      if (this.stopped) return;
      let ok = false;
      try {
        ok = await this.tryAcquireOrRenew();
      } catch (e) {
        this.o.log?.(`leader election: ${(e as Error).message}`);
      }
      if (this.stopped) return;
      this.attempts++;
      if (ok) {
        this.lastRenew = Date.now();
        if (!this.leading) {
          this.leading = true;
          this.transitions++;
          this.o.log?.(`leader election: ${this.o.identity} is the leader`);
          onStart();
        }
      } else if (this.leading && Date.now() - this.lastRenew > this.deadline) {
        this.leading = false;
        this.o.log?.(`leader election: ${this.o.identity} lost the lease`);
        onStop();
      }
      this.timer = setTimeout(() => void (this.loop = tick()), this.retry);
    };
    this.loop = tick();
  }

  /**
   * Stops campaigning; a holder releases the Lease so a standby takes over at once.
   * `release: false` behaves like a crash (tests): the Lease stays until it expires.
   */
  async stop(opts: { release?: boolean } = {}): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.loop;
    if (!this.leading) return;
    if (opts.release === false) {
      this.leading = false;
      return;
    }
    this.leading = false;
    try {
      const cur = await this.client.get<Lease>(this.path());
      if (cur && cur.spec.holderIdentity === this.o.identity) {
        await this.client.replace({ ...cur, spec: { ...cur.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime() } });
      }
    } catch (e) {
      this.o.log?.(`leader election: release failed: ${(e as Error).message}`);
    }
  }
}
