/** Helpers for the host tests: a sandbox-probe instance and a typed call. */
import { ComponentInstance, loadComponent, type ComponentThread, type Grants, type HostImports, type NetworkDenial } from '../../runtime/host/index.ts';
import { fixture } from '../fixtures/build.ts';

export interface ProbeReply {
  status: string;
  body: { ok: boolean; value?: unknown; error?: string };
}

export const quietImports: HostImports = {
  'murmur:task/task': { requestInput: async (p: string) => `reply:${p}` },
  'murmur:text/chunks': { emitChunk: () => {}, emitThinkingChunk: () => {} },
};

export async function probe(
  grants: Partial<Grants> = {},
  opts: {
    deadlineMs?: number;
    memoryBytes?: number;
    imports?: HostImports;
    onNetworkDenied?: (d: NetworkDenial) => void;
    retireAfterGrowthBytes?: number;
    thread?: ComponentThread;
    spinUs?: number;
  } = {},
): Promise<ComponentInstance> {
  const c = await loadComponent(await fixture('sandbox-probe'));
  return new ComponentInstance(c, {
    grants: { env: {}, networkAllow: [], ...grants },
    imports: opts.imports ?? quietImports,
    deadlineMs: opts.deadlineMs ?? 20_000,
    memoryBytes: opts.memoryBytes ?? 256 * 1048576,
    ...(opts.onNetworkDenied ? { onNetworkDenied: opts.onNetworkDenied } : {}),
    ...(opts.retireAfterGrowthBytes !== undefined ? { retireAfterGrowthBytes: opts.retireAfterGrowthBytes } : {}),
    ...(opts.thread ? { thread: opts.thread } : {}),
    ...(opts.spinUs !== undefined ? { spinUs: opts.spinUs } : {}),
  });
}

export async function op(inst: ComponentInstance, req: Record<string, unknown>, deadlineMs?: number): Promise<ProbeReply> {
  const r = await inst.call<{ status: string; data: string }>(['run', 'run'], [{ data: JSON.stringify(req) }], deadlineMs ? { deadlineMs } : {});
  return { status: r.status, body: JSON.parse(r.data) as ProbeReply['body'] };
}
