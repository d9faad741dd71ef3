/** A small parser of the Prometheus text exposition format (0.0.4), for asserting on /metrics. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  types: Map<string, string>;
  help: Map<string, string>;
  /** The value of the series with exactly these labels, or undefined. */
  get(name: string, labels?: Record<string, string>): number | undefined;
  /** Every series of `name`. */
  all(name: string): Sample[];
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/g;

export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice(7).split(/\s+/);
      types.set(name!, type!);
      continue;
    }
    if (line.startsWith('# HELP ')) {
      const i = line.indexOf(' ', 7);
      help.set(line.slice(7, i), line.slice(i + 1));
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`unparseable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    const v = m[3]!;
    samples.push({ name: m[1]!, labels, value: v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : Number(v) });
  }
  const same = (a: Record<string, string>, b: Record<string, string>) => {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return ka.length === kb.length && ka.every((k, i) => k === kb[i] && a[k] === b[k]);
  };
  return {
    samples,
    types,
    help,
    get: (name, labels = {}) => samples.find((s) => s.name === name && same(s.labels, labels))?.value,
    all: (name) => samples.filter((s) => s.name === name),
  };
}
