/**
 * The runtime's V8 heap limit, sized to the pod's memory limit. V8 lets the main heap grow to a
 * multiple of what its last full GC kept alive, and the multiple follows the heap limit (≈ 4 with
 * the limit it derives on a large node, ≈ 1.4 at 512 MiB): a capsule under load held twice its live
 * heap in pages without a limit (bench/soak.ts: 400–460 MiB RSS, 250–310 with 512 MiB). Half of
 * the container's memory limit leaves the other half to what is not the main heap: the component
 * workers' heaps and wasm memories, the token counter, the binary's pages. Without a memory limit
 * the image's own NODE_OPTIONS (512 MiB, Dockerfile) stays.
 */
import { quantity } from '../../api/quantity.ts';

/** The smallest heap the runtime is given (a pod limit of 128 MiB or less). */
export const MIN_HEAP_MIB = 64;

/** `--max-old-space-size` in MiB for a container memory limit (a quantity), or undefined when none is set. Pure: see the table test. */
export function heapLimitMiB(memoryLimit: unknown): number | undefined {
  const bytes = quantity(memoryLimit);
  if (bytes === undefined || !(bytes > 0)) return undefined;
  return Math.max(MIN_HEAP_MIB, Math.floor(bytes / 2 / 1048576));
}

/** The container env that applies it (NODE_OPTIONS replaces the image's), or none. */
export function heapEnv(resources: { limits?: Record<string, unknown> } | undefined): { name: string; value: string }[] {
  const mib = heapLimitMiB(resources?.limits?.memory);
  return mib === undefined ? [] : [{ name: 'NODE_OPTIONS', value: `--max-old-space-size=${mib}` }];
}
