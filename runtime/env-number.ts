/**
 * One rule for the runtime's numeric tuning variables (MURMUR_*_IDLE_MS, MURMUR_DRIVER_RETIRE_GROWTH_MIB):
 * unset or empty is the default, anything but a finite number ≥ 0 is refused with the variable's
 * name, its unit, the value given and what to set (a MurError with the caller's stable code).
 */
import { MurError } from './errors.ts';

export function envNonNegative(env: NodeJS.ProcessEnv, name: string, def: number, refusal: { code: string; unit: string; hint: string }): number {
  const v = env[name];
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0) {
    throw new MurError(refusal.code, `${name} must be a number of ${refusal.unit} ≥ 0, not ${JSON.stringify(v)}`, { hint: refusal.hint });
  }
  return n;
}
