/** A small argv parser: `--flag value`, `--flag=value`, boolean flags, positionals; unknown flags are errors. */
export interface FlagSpec {
  [name: string]: { type: 'string' | 'boolean' | 'number'; help: string; default?: string | number | boolean };
}

export class UsageError extends Error {}

export function parseArgs(argv: string[], spec: FlagSpec): { flags: Record<string, string | number | boolean | undefined>; positionals: string[] } {
  const flags: Record<string, string | number | boolean | undefined> = {};
  for (const [k, v] of Object.entries(spec)) flags[k] = v.default;
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!a.startsWith('--')) {
      positionals.push(a);
      continue;
    }
    const [rawName, inline] = a.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    const s = spec[rawName];
    if (!s) {
      const near = Object.keys(spec).sort((x, y) => dist(x, rawName) - dist(y, rawName))[0];
      throw new UsageError(`unknown flag --${rawName}${near && dist(near, rawName) <= 3 ? ` (did you mean --${near}?)` : ''}`);
    }
    if (s.type === 'boolean') {
      flags[rawName] = inline === undefined ? true : inline !== 'false';
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new UsageError(`--${rawName} needs a value`);
    if (s.type === 'number') {
      const n = Number(value);
      if (!Number.isFinite(n)) throw new UsageError(`--${rawName} must be a number, got ${JSON.stringify(value)}`);
      flags[rawName] = n;
    } else flags[rawName] = value;
  }
  return { flags, positionals };
}

export function helpText(usage: string, summary: string, spec: FlagSpec): string {
  const lines = [`usage: ${usage}`, '', summary, ''];
  if (Object.keys(spec).length) {
    lines.push('flags:');
    for (const [k, v] of Object.entries(spec)) {
      const arg = v.type === 'boolean' ? '' : ` <${v.type === 'number' ? 'n' : 'value'}>`;
      lines.push(`  --${(k + arg).padEnd(24)} ${v.help}${v.default !== undefined && v.type !== 'boolean' ? ` (default: ${v.default})` : ''}`);
    }
  }
  return lines.join('\n');
}

function dist(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)] as number[]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
  return d[a.length]![b.length]!;
}
