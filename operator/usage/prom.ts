/**
 * A tiny parser of the Prometheus text exposition format 0.0.4 (what prom-client serves), and the
 * token sums the operator reads from a capsule pod's /metrics.
 *
 * Only what the format allows is accepted: `# HELP` / `# TYPE` / other comments, and sample lines
 * `name{label="value",...} value [timestamp]` with the label-value escapes `\\`, `\"` and `\n`.
 * A malformed line throws (the scrape then counts as failed; nothing is guessed).
 */

export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;

function parseValue(s: string, line: string): number {
  // Case-insensitive like Go's ParseFloat (Prometheus' parser): prom-client writes NaN as `Nan`.
  const l = s.toLowerCase();
  if (l === '+inf' || l === 'inf') return Infinity;
  if (l === '-inf') return -Infinity;
  if (l === 'nan') return NaN;
  const v = Number(s);
  if (s === '' || Number.isNaN(v)) throw new Error(`bad sample value in: ${line}`);
  return v;
}

/** Parse one sample line (no leading/trailing whitespace, not a comment). */
function parseSample(line: string): PromSample {
  const m = NAME.exec(line);
  if (!m) throw new Error(`bad metric name in: ${line}`);
  const name = m[0];
  let i = name.length;
  const labels: Record<string, string> = {};
  if (line[i] === '{') {
    i++;
    for (;;) {
      while (line[i] === ' ') i++;
      if (line[i] === '}') {
        i++;
        break;
      }
      const ln = LABEL_NAME.exec(line.slice(i));
      if (!ln) throw new Error(`bad label name in: ${line}`);
      i += ln[0].length;
      while (line[i] === ' ') i++;
      if (line[i] !== '=' || line[i + 1] !== '"') throw new Error(`bad label in: ${line}`);
      i += 2;
      let v = '';
      for (;;) {
        const ch = line[i];
        if (ch === undefined) throw new Error(`unterminated label value in: ${line}`);
        if (ch === '"') {
          i++;
          break;
        }
        if (ch === '\\') {
          const nx = line[i + 1];
          v += nx === 'n' ? '\n' : nx === '\\' ? '\\' : nx === '"' ? '"' : `\\${nx ?? ''}`;
          i += 2;
          continue;
        }
        v += ch;
        i++;
      }
      labels[ln[0]] = v;
      while (line[i] === ' ') i++;
      if (line[i] === ',') i++;
      else if (line[i] !== '}') throw new Error(`expected , or } in: ${line}`);
    }
  }
  const rest = line.slice(i).trim().split(/\s+/);
  if (rest.length < 1 || rest.length > 2 || rest[0] === '') throw new Error(`bad sample in: ${line}`);
  if (rest.length === 2 && !/^-?\d+$/.test(rest[1]!)) throw new Error(`bad timestamp in: ${line}`);
  return { name, labels, value: parseValue(rest[0]!, line) };
}

export function parsePrometheusText(text: string): PromSample[] {
  const out: PromSample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    out.push(parseSample(line));
  }
  return out;
}

export const TOKENS_METRIC = 'capsule_tokens_total';
export const START_TIME_METRIC = 'process_start_time_seconds';

/** What one scrape of a capsule pod says. */
export interface PodTokens {
  /** Sum of capsule_tokens_total{token_type="input"} over every other label (cache_* are subsets of it, not added). */
  input: number;
  /** Sum of capsule_tokens_total{token_type="output"}. */
  output: number;
  /** process_start_time_seconds of the runtime process, when exported: a change means the counters restarted. */
  startTime?: number;
}

export function podTokens(samples: PromSample[]): PodTokens {
  let input = 0;
  let output = 0;
  let startTime: number | undefined;
  for (const s of samples) {
    if (s.name === TOKENS_METRIC && Number.isFinite(s.value)) {
      if (s.labels.token_type === 'input') input += s.value;
      else if (s.labels.token_type === 'output') output += s.value;
    } else if (s.name === START_TIME_METRIC && startTime === undefined && Number.isFinite(s.value)) startTime = s.value;
  }
  return { input: Math.round(input), output: Math.round(output), ...(startTime !== undefined ? { startTime } : {}) };
}
