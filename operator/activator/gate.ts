/**
 * What every request goes through, whatever its transport (http1.ts, http2.ts), in this order:
 * route (Host → Capsule, 404), the NetworkPolicy fence (403), then for the card the recorded card,
 * else authentication (401), and only then the wake and the hold until a capsule pod is ready
 * (503 past the bound). A refusal never wakes: the Event is created after both fences passed.
 * A Capsule that already has a ready pod is proxied at once, without an Event.
 */
import type { Capsule } from '../api/types.ts';
import type { Authenticator } from './auth.ts';
import { type ActivatorCache, SLICE_CONTROLLER, SLICE_OPERATOR } from './cache.ts';
import { A2A_PORT_NAME, type Endpoint, type EndpointWaits, pick, readyEndpoints, sleepEnabled, startingEndpoints } from './endpoints.ts';
import { CODES, type Refusal, refusal } from './errors.ts';
import { admitsSource, plainIp } from './fences.ts';
import type { ActivatorMetrics } from './metrics.ts';
import { routeOf } from './routing.ts';
import { reachable } from './reach.ts';
import type { ServingProbes } from './serving-probe.ts';
import type { Waker } from './wake.ts';

/** The runtime's A2A container port (operator/translate/builders/common.ts A2A_PORT), named `a2a`. */
export const A2A_CONTAINER_PORT = 8080;
/** The operator's ingress policy of a Capsule (operator/translate/builders/common.ts names().ingress). */
export const ingressPolicyName = (capsule: string) => `${capsule}-ingress`;
/** The card paths the runtime answers without authentication (the legacy one too, as older clients ask it). */
export const CARD_PATHS = new Set(['/.well-known/agent-card.json', '/.well-known/agent.json']);
export const RETRY_AFTER_SECONDS = 5;

export interface GateConfig {
  cache: ActivatorCache;
  auth: Authenticator;
  waker: Waker;
  waits: EndpointWaits;
  metrics: ActivatorMetrics;
  /** How long a request is held at most. */
  holdMs: number;
  clusterDomain: string;
  /** Where an endpoint is dialled (tests: the API server refuses loopback addresses in an EndpointSlice). */
  dial?: (e: Endpoint) => Endpoint;
  /** Where the activator's log lines go. */
  log?: (m: string) => void;
  /** Asks starting pods whether they serve yet (serving-probe.ts); without it, only kubelet-ready pods are targets. */
  probes?: ServingProbes;
}

const key = (c: Capsule) => `${c.metadata.namespace}/${c.metadata.name}`;

export class Gate {
  constructor(private readonly g: GateConfig) {}

  /** Counts a refusal and hands it back (for `return gate.refused(...)`). */
  refused(r: Refusal): Refusal {
    this.g.metrics.refusals.inc({ reason: r.reason });
    return r;
  }

  /** The Capsule `host` names, if the caller at `sourceIp` may reach it; else the 404 or 403. */
  admit(host: string | undefined, sourceIp: string): Capsule | Refusal {
    const { cache } = this.g;
    const route = routeOf(host, this.g.clusterDomain);
    const c = route && cache.capsule(route.namespace, route.service);
    if (!route || !c || !sleepEnabled(cache.slicesOf(route.namespace, route.service), route.service, SLICE_OPERATOR)) {
      const what = route ? `${route.namespace}/${route.service}` : `host ${JSON.stringify(host ?? '')}`;
      return this.refused(
        refusal('unknown_capsule', 404, `no sleep-enabled Capsule for ${what}: call a Capsule's Service as <name>.<namespace>.svc`, CODES.unknownCapsule),
      );
    }
    const policy = cache.policy(route.namespace, ingressPolicyName(c.metadata.name));
    const ip = plainIp(sourceIp);
    // No rendered policy (yet): refuse rather than guess, as a policy the operator has not written cannot admit anyone.
    if (!policy || !admitsSource(policy, { number: A2A_CONTAINER_PORT, name: A2A_PORT_NAME }, cache.source(ip), cache)) {
      return this.refused(
        refusal(
          'network_policy',
          403,
          `${ip} is not admitted by NetworkPolicy ${route.namespace}/${ingressPolicyName(c.metadata.name)} on the a2a port: capsule ${key(c)} was not woken`,
          CODES.refusedByPolicy,
        ),
      );
    }
    return c;
  }

  async authenticate(c: Capsule, authorization: string | string[] | undefined): Promise<Refusal | undefined> {
    const r = await this.g.auth.check(c, authorization);
    return r && this.refused(r);
  }

  /** A ready capsule pod now, if there is one. */
  ready(c: Capsule): Endpoint | undefined {
    const e = pick(readyEndpoints(this.g.cache.slicesOf(c.metadata.namespace ?? 'default', c.metadata.name), SLICE_CONTROLLER));
    return e && this.g.dial ? this.g.dial(e) : e;
  }

  /** A starting pod that answered its own /readyz (serving-probe.ts) before the kubelet's probe made it ready. */
  private serving(c: Capsule, deadline: number): Endpoint | undefined {
    const probes = this.g.probes;
    if (!probes) return undefined;
    const starting = startingEndpoints(this.g.cache.slicesOf(c.metadata.namespace ?? 'default', c.metadata.name), SLICE_CONTROLLER);
    const e = probes.servingOf(key(c), this.g.dial ? starting.map(this.g.dial) : starting, deadline);
    return e;
  }

  /** The card recorded when the capsule went to sleep, or the 503 saying there is none yet. */
  card(c: Capsule): string | Refusal {
    const card = c.status?.sleep?.agentCard;
    if (card) return card;
    return this.refused(refusal('no_card', 503, `capsule ${key(c)} has no agent card recorded yet: retry shortly`, CODES.noCard, RETRY_AFTER_SECONDS));
  }

  /**
   * Wakes the capsule and waits for a ready pod, at most the hold bound. `signal`: the caller went
   * away (the wait ends; the wake stays asked for).
   */
  async hold(c: Capsule, binding: string, signal: AbortSignal): Promise<Endpoint | Refusal | undefined> {
    const deadline = Date.now() + this.g.holdMs;
    const now = this.ready(c);
    if (now) return (await this.reach(now, deadline, signal)) ? now : this.unreachable(c, now, signal);
    const { metrics, waits, waker } = this.g;
    const t0 = process.hrtime.bigint();
    metrics.held.inc();
    const bound = AbortSignal.timeout(this.g.holdMs);
    try {
      void waker.wake(c, binding);
      const e = await waits.wait(key(c), () => this.ready(c) ?? this.serving(c, deadline), AbortSignal.any([signal, bound]));
      if (e && !(await this.reach(e, deadline, signal))) return this.unreachable(c, e, signal);
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      if (e) {
        metrics.holdSeconds.observe({ result: 'delivered' }, seconds);
        return e;
      }
      if (signal.aborted) {
        metrics.holdSeconds.observe({ result: 'gone' }, seconds);
        return undefined;
      }
      metrics.holdSeconds.observe({ result: 'timeout' }, seconds);
      return this.refused(
        refusal(
          'wake_timeout',
          503,
          `capsule ${key(c)} is waking and had no ready pod within ${this.g.holdMs / 1000} s: retry after ${RETRY_AFTER_SECONDS} s`,
          CODES.wakeTimeout,
          RETRY_AFTER_SECONDS,
        ),
      );
    } finally {
      metrics.held.dec();
    }
  }

  /** A ready pod this activator can connect to yet (reach.ts): the NetworkPolicy engine may lag its readiness. */
  private reach(e: Endpoint, deadline: number, signal: AbortSignal): Promise<boolean> {
    // `e` comes from ready(), already dialled.
    return reachable(e, deadline, signal, (why) => this.g.log?.(`capsule pod ${e.ip}:${e.port} not reachable yet (${why}): trying again`));
  }

  private unreachable(c: Capsule, e: Endpoint, signal: AbortSignal): Refusal | undefined {
    if (signal.aborted) return undefined;
    return this.refused(
      refusal(
        'wake_timeout',
        503,
        `capsule ${key(c)} has a ready pod (${e.ip}:${e.port}) that did not accept a connection within ${this.g.holdMs / 1000} s: retry after ${RETRY_AFTER_SECONDS} s`,
        CODES.wakeTimeout,
        RETRY_AFTER_SECONDS,
      ),
    );
  }
}

export function isRefusal(x: unknown): x is Refusal {
  return typeof x === 'object' && x !== null && 'reason' in x && 'status' in x;
}
