/**
 * When an instance that kept working is still retired. WebAssembly memory never shrinks: whatever a
 * guest's allocator has taken stays taken until its instance ends. A guest that leaks therefore
 * grows call after call, and componentize-js guests do (measured with the echo tool under the
 * runtime: about 50 KiB of linear memory lost per call with a 100 KB argument, never reclaimed;
 * the built-in driver went from 17 MiB to 124 MiB over 800 tasks of 100 KiB), until the memory cap
 * traps a call and the task fails. Retiring such an instance between calls, once it has grown a
 * set amount past where it settled after its first call, bounds that growth and gives the memory
 * back; the next call starts on a fresh instance (a spare when one is ready: host/spares.ts).
 *
 * Only components without state worth keeping are retired: the inference driver (each call carries
 * the whole conversation; continuations are the host's). Tools and hooks may keep in-memory state
 * for their session (the spec's async hooks do), so they are never retired for growth.
 */
import { envNonNegative } from '../env-number.ts';

/**
 * Default growth past the first call's memory that retires a driver: 16 MiB. Measured under
 * bench/soak.ts (200 clients, 100 KiB messages, the image; 180-s runs alternating, session 13): at
 * 32 MiB the driver's linear memory swung 21–52 MiB and the process's last-minute median RSS was
 * 294.9 / 274.9 MiB (max 304.3 / 293.8); at 16 MiB it swung 21–35 MiB, 269.4 / 274.2 (max 274.4 /
 * 284.5), with as many tasks completed (5 784 / 6 151 against 6 003 / 6 065).
 */
export const DEFAULT_RETIRE_GROWTH_BYTES = 16 * 1048576;

/**
 * Whether an instance whose linear memory measured `baseline` bytes after its first call and
 * `now` bytes after the latest should be retired, with `growth` the allowed growth (0 or undefined:
 * never). Pure; see the table test.
 */
export function shouldRetire(baseline: number | undefined, now: number, growth: number | undefined): boolean {
  if (!growth || growth <= 0 || baseline === undefined) return false;
  return now - baseline > growth;
}

/**
 * The driver's allowed growth from MURMUR_DRIVER_RETIRE_GROWTH_MIB (0 turns retiring off), else the
 * default. A value that is not a number of MiB ≥ 0 is refused with the variable's name.
 */
export function driverRetireGrowth(env: NodeJS.ProcessEnv = process.env): number {
  const mib = envNonNegative(env, 'MURMUR_DRIVER_RETIRE_GROWTH_MIB', DEFAULT_RETIRE_GROWTH_BYTES / 1048576, {
    code: 'E-RUN-031',
    unit: 'MiB',
    hint: "set it to the growth of the driver's memory that retires its instance (default 16), or 0 to never retire it",
  });
  return Math.round(mib * 1048576);
}
