/**
 * Kubernetes resource quantities ("512Mi", "1Gi", "1000m", "1e3" is not one) as numbers: the one
 * parser of the format, used where live objects are compared (reconcile/compare.ts) and where a
 * container's limits size what runs in it (translate/builders/heap.ts).
 */
const SUFFIX: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** The value of a quantity (a number passes through), or undefined when it is not one. */
export function quantity(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v !== 'string') return undefined;
  const m = /^([+-]?\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$/.exec(v);
  if (!m) return undefined;
  return Number(m[1]) * SUFFIX[m[2] ?? '']!;
}
