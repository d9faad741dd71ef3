/**
 * Aggregated validation errors. Manifest and staging checks collect every problem they find and
 * throw ONE `MurErrorList` whose `errors` holds each problem as its own `MurError` (with file,
 * line, column, dotted field path and hint). `format()` prints them all.
 */
import { MurError, type ErrorLocation } from '../errors.ts';

export class MurErrorList extends MurError {
  readonly errors: readonly MurError[];

  constructor(code: string, summary: string, errors: readonly MurError[]) {
    super(code, `${summary}: ${errors.length} error${errors.length === 1 ? '' : 's'}`, {
      hint: errors.length === 1 ? errors[0]!.hint : 'fix each error listed below',
      location: errors[0]?.location,
    });
    this.name = 'MurErrorList';
    this.errors = errors;
  }

  /** The summary line, then every error in `MurError.format()` form. */
  override format(): string {
    return [`${this.message} [${this.code}]`, ...this.errors.map((e) => e.format())].join('\n');
  }

  /** The stable codes of every contained error, in order. */
  codes(): string[] {
    return this.errors.map((e) => e.code);
  }
}

export function isMurErrorList(e: unknown): e is MurErrorList {
  return e instanceof MurErrorList;
}

/** Collects problems; `throwIfAny` raises them as one `MurErrorList`. */
export class ErrorCollector {
  readonly errors: MurError[] = [];

  add(code: string, message: string, hint: string, location: ErrorLocation): void {
    this.errors.push(new MurError(code, message, { hint, location }));
  }

  push(e: MurError): void {
    this.errors.push(e);
  }

  get size(): number {
    return this.errors.length;
  }

  throwIfAny(code: string, summary: string): void {
    if (this.errors.length === 0) return;
    // Stable order: by file, then line, then column (collection order breaks ties).
    const sorted = this.errors
      .map((e, i) => ({ e, i }))
      .sort((a, b) => {
        const la = a.e.location ?? {};
        const lb = b.e.location ?? {};
        return (la.file ?? '').localeCompare(lb.file ?? '') || (la.line ?? 0) - (lb.line ?? 0) || (la.column ?? 0) - (lb.column ?? 0) || a.i - b.i;
      })
      .map((x) => x.e);
    throw new MurErrorList(code, summary, sorted);
  }
}

/** Levenshtein distance (small strings only). */
export function editDistance(a: string, b: string): number {
  const m = a.length;
  const n = b.length;
  let prev = Array.from({ length: n + 1 }, (_, j) => j);
  for (let i = 1; i <= m; i++) {
    const cur = [i];
    for (let j = 1; j <= n; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
    }
    prev = cur;
  }
  return prev[n]!;
}

/** The candidate nearest to `word`, if it is close enough to be a plausible typo. */
export function nearest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  const w = word.toLowerCase();
  for (const c of candidates) {
    const d = editDistance(w, c.toLowerCase());
    if (d < bestD) {
      bestD = d;
      best = c;
    }
  }
  if (best === undefined) return undefined;
  const limit = Math.max(2, Math.floor(Math.max(word.length, best.length) / 3));
  return bestD <= limit ? best : undefined;
}
