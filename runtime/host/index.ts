/** The component host: load (verify + transpile-once), then instantiate with per-instance grants. */
export { loadComponent, defaultCacheDir, type LoadedComponent } from './transpile-cache.ts';
export { sha256Hex } from '../contracts/digest.ts';
export { fileDigest } from './file-digest.ts';
export { ComponentInstance, drainWorkerPool, type HostImports, type HostFn, type InstanceOptions } from './instance.ts';
export { oneShotWorkers } from './workers.ts';
export { ComponentThread, componentIdleKeepBytes, componentIdleMs, componentSpinUs, componentThreads } from './thread.ts';
export type { Grants, NetworkDenial } from './protocol.ts';
export * from './errors.ts';

export const DEFAULT_LIMITS = {
  hookDeadlineMs: 30_000,
  toolDeadlineMs: 600_000,
  driverDeadlineMs: 600_000,
  memoryBytes: 512 * 1048576,
} as const;
