/**
 * Where a held request goes: a ready endpoint of the Capsule's Service in a slice the EndpointSlice
 * controller manages (the capsule's own pods), never the operator's `<capsule>-activator` slice
 * (which points back here). And the waits for one: each waiter is woken by the EndpointSlice watch
 * of its Service (`changed`), re-checks, and either goes on or keeps waiting; no polling.
 */
import type { KubeObject } from '../api/types.ts';

export interface EndpointSliceView extends KubeObject {
  addressType?: string;
  endpoints?: Array<{ addresses?: string[]; conditions?: { ready?: boolean; terminating?: boolean } }>;
  ports?: Array<{ name?: string; port?: number; protocol?: string }>;
}

export interface Endpoint {
  ip: string;
  port: number;
}

const MANAGED_BY = 'endpointslice.kubernetes.io/managed-by';

/** The container port's name on capsule pods, and the Service port's (operator/translate/builders/service.ts). */
export const A2A_PORT_NAME = 'a2a';

function managedBy(s: EndpointSliceView): string | undefined {
  return s.metadata.labels?.[MANAGED_BY];
}

/**
 * The ready endpoints of the capsule pods (slices of `controller`), on the slice's `a2a` port.
 * `conditions.ready` unset counts as ready, as the EndpointSlice API says consumers should read it.
 */
export function readyEndpoints(slices: EndpointSliceView[], controller: string): Endpoint[] {
  const out: Endpoint[] = [];
  for (const s of slices) {
    if (managedBy(s) !== controller) continue;
    const port = s.ports?.find((p) => p.name === A2A_PORT_NAME)?.port;
    if (port === undefined) continue;
    for (const e of s.endpoints ?? []) {
      if (e.conditions?.ready === false) continue;
      for (const ip of e.addresses ?? []) out.push({ ip, port });
    }
  }
  return out;
}

/**
 * Endpoints of starting capsule pods (slices of `controller`): listed with their address but not
 * ready, and not terminating — a woken pod before the kubelet's readiness probe has run
 * (serving-probe.ts asks them itself).
 */
export function startingEndpoints(slices: EndpointSliceView[], controller: string): Endpoint[] {
  const out: Endpoint[] = [];
  for (const s of slices) {
    if (managedBy(s) !== controller) continue;
    const port = s.ports?.find((p) => p.name === A2A_PORT_NAME)?.port;
    if (port === undefined) continue;
    for (const e of s.endpoints ?? []) {
      if (e.conditions?.ready !== false || e.conditions?.terminating === true) continue;
      for (const ip of e.addresses ?? []) out.push({ ip, port });
    }
  }
  return out;
}

/** Whether the operator keeps a `<capsule>-activator` slice for this Service: the Capsule may sleep. */
export function sleepEnabled(slices: EndpointSliceView[], capsule: string, operator: string): boolean {
  return slices.some((s) => s.metadata.name === `${capsule}-activator` && managedBy(s) === operator);
}

/** Spreads held requests over the ready pods. */
export function pick(endpoints: Endpoint[]): Endpoint | undefined {
  return endpoints.length ? endpoints[Math.floor(Math.random() * endpoints.length)] : undefined;
}

/** Waits for a Service's endpoints, woken by `changed(key)` from the EndpointSlice watch. */
export class EndpointWaits {
  private readonly waiters = new Map<string, Set<() => void>>();

  /** Resolves with an endpoint `find()` gives, re-asked after every change of `key`; undefined when `signal` aborts. */
  wait(key: string, find: () => Endpoint | undefined, signal: AbortSignal): Promise<Endpoint | undefined> {
    const now = find();
    if (now || signal.aborted) return Promise.resolve(now);
    return new Promise((resolve) => {
      let set = this.waiters.get(key);
      if (!set) this.waiters.set(key, (set = new Set()));
      const done = (e: Endpoint | undefined) => {
        set.delete(check);
        if (!set.size && this.waiters.get(key) === set) this.waiters.delete(key);
        signal.removeEventListener('abort', aborted);
        resolve(e);
      };
      const check = () => {
        const e = find();
        if (e) done(e);
      };
      const aborted = () => done(undefined);
      set.add(check);
      signal.addEventListener('abort', aborted, { once: true });
    });
  }

  changed(key: string): void {
    for (const check of [...(this.waiters.get(key) ?? [])]) check();
  }

  get waiting(): number {
    let n = 0;
    for (const s of this.waiters.values()) n += s.size;
    return n;
  }
}
