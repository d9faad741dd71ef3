/**
 * Is a live object already what we would apply? Every field we set must be present with the same
 * value; fields the server or others add are ignored. Quantities compare by value ("1000m" == "1").
 * This is what keeps the steady state free of writes: an up-to-date object is not even patched.
 */
const SUFFIX: Record<string, number> = {
  n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

function quantity(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v !== 'string') return undefined;
  const m = /^([+-]?\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$/.exec(v);
  if (!m) return undefined;
  return Number(m[1]) * SUFFIX[m[2] ?? '']!;
}

export function covers(live: unknown, want: unknown, path = ''): boolean {
  if (want === undefined) return true;
  if (want === null) return live === null || live === undefined;
  if (Array.isArray(want)) {
    if (!Array.isArray(live) || live.length !== want.length) return false;
    return want.every((w, i) => covers(live[i], w, `${path}[${i}]`));
  }
  if (typeof want === 'object') {
    if (!live || typeof live !== 'object' || Array.isArray(live)) return false;
    const l = live as Record<string, unknown>;
    return Object.entries(want as Record<string, unknown>).every(([k, w]) => covers(l[k], w, `${path}.${k}`));
  }
  if (live === want) return true;
  if (/\.(resources\.(limits|requests)\.[^.]+|sizeLimit)$/.test(path)) {
    const a = quantity(live);
    const b = quantity(want);
    return a !== undefined && b !== undefined && Math.abs(a - b) < 1e-9 * Math.max(1, Math.abs(b));
  }
  return false;
}
