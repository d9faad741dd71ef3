/**
 * The `network_denied` trace event: a component's outgoing request that its network grant refused
 * (the guest got `HTTP-request-denied`, no connection was made). One function so every place that
 * starts components — agent sessions, hooks, script capsules — writes the same fields.
 */
import type { NetworkDenial } from '../contracts/network-denial.ts';
import type { TraceWriter } from './writer.ts';

export type ComponentKind = 'tool' | 'driver' | 'hook' | 'capsule';

/**
 * An `onNetworkDenied` for a ComponentInstance. `trace` and `taskId` are read when a denial
 * happens (a hook's trace is attached after staging; the task changes during a session).
 */
export function traceNetworkDenied(
  trace: () => TraceWriter | undefined,
  kind: ComponentKind,
  name: string,
  taskId: () => string | undefined = () => undefined,
): (d: NetworkDenial) => void {
  return (d) =>
    trace()?.write('network_denied', {
      component_kind: kind,
      component: name,
      destination: `${d.scheme}://${d.host.includes(':') && !d.host.startsWith('[') ? `[${d.host}]` : d.host}:${d.port}`,
      task_id: taskId(),
    });
}
