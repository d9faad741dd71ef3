/**
 * One rule for the runtime's numeric tuning variables (MURMUR_*_IDLE_MS, MURMUR_DRIVER_RETIRE_GROWTH_MIB):
 * unset or empty is the default, anything but a finite number ≥ 0 is refused with the variable's
 * name, its unit (and bound, if it has one), the value given and what to set (a MurError with the caller's stable code).
 */
import { MurError } from './errors.ts';

export function envNonNegative(env: NodeJS.ProcessEnv, name: string, def: number, refusal: { code: string; unit: string; hint: string; max?: number }): number {
  const v = env[name];
  if (v === undefined || v === '') return def;
  const n = Number(v);
  const { max } = refusal;
  if (v.trim() === '' || !Number.isFinite(n) || n < 0 || (max !== undefined && n > max)) {
    const range = max === undefined ? '≥ 0' : `from 0 to ${max}`;
    throw new MurError(refusal.code, `${name} must be a number of ${refusal.unit} ${range}, not ${JSON.stringify(v)}`, { hint: refusal.hint });
  }
  return n;
}
