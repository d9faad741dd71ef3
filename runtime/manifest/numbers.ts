/**
 * Integers and byte sizes in a manifest. YAML reads `1e30`, `2.0` and `18446744073709551616` all as
 * numbers, and a JavaScript number holds integers exactly only up to 2^53 - 1: such a value passed
 * a check on the parsed number and failed at task time (a memory cap of 1e30, a `max_tokens` that
 * was no longer the integer written). So an integer field takes only an integer literal, compared
 * exactly as written against its range, and every integer field has an upper bound.
 */
import { isScalar, type Node } from 'yaml';
import type { FieldSpec } from './schema.ts';

/** YAML 1.2 core schema integers: decimal, `0o` octal, `0x` hex. No fraction, no exponent. */
const INTEGER_LITERAL_RE = /^[-+]?(?:[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$/;

/** The integer a scalar was written as, exactly (beyond 2^53 too), or undefined if it is not one. */
export function integerLiteral(n: Node | null): bigint | undefined {
  if (!isScalar(n) || typeof n.value !== 'number') return undefined;
  const src = (n.source ?? String(n.value)).trim();
  if (!INTEGER_LITERAL_RE.test(src)) return undefined;
  // BigInt reads `10`, `0o17` and `0x10` alike, but not a sign in front of `0o`/`0x`.
  const v = BigInt(src.replace(/^[-+]/, ''));
  return src.startsWith('-') ? -v : v;
}

/** The largest value of an integer or byte-size field: its own `max`, else the largest exact integer. */
export function maxOf(spec: FieldSpec): number {
  return spec.max ?? Number.MAX_SAFE_INTEGER;
}

/** The allowed range as messages state it: `integer from 1 to 9007199254740991`, else the row's rule. */
export function rangeText(spec: FieldSpec): string {
  if (spec.type !== 'integer' || spec.min === undefined) return spec.validation;
  return `integer from ${spec.minExclusive ? spec.min + 1 : spec.min} to ${maxOf(spec)}`;
}

/** What to give instead, e.g. `give an integer from 1 to 9007199254740991`. */
export function rangeHint(spec: FieldSpec): string {
  return `give ${rangeText(spec)
    .replace(/^integer /, 'an integer ')
    .replace(/^number /, 'a number ')}`;
}

/** Whether `v` lies in the field's range: an integer or byte size exactly as written (a bigint). */
export function inRangeOf(spec: FieldSpec, v: number | bigint): boolean {
  if (typeof v === 'number') return (spec.min === undefined || (spec.minExclusive ? v > spec.min : v >= spec.min)) && (spec.max === undefined || v <= spec.max);
  const lowOk = spec.min === undefined || (spec.minExclusive ? v > BigInt(spec.min) : v >= BigInt(spec.min));
  return lowOk && v <= BigInt(maxOf(spec));
}

const BYTES_RE = /^(\d+)\s*(k|ki|kib|m|mi|mib|g|gi|gib|t|ti|tib)?$/i;
const BYTE_UNITS: Record<string, bigint> = { k: 2n ** 10n, m: 2n ** 20n, g: 2n ** 30n, t: 2n ** 40n };

/** A byte size written as a string (`512Mi`, `1GiB`, `64K`), exactly; undefined if it is not one. */
export function parseBytes(s: string): bigint | undefined {
  const m = BYTES_RE.exec(s.trim());
  if (!m) return undefined;
  return BigInt(m[1]!) * (m[2] ? BYTE_UNITS[m[2][0]!.toLowerCase()]! : 1n);
}
