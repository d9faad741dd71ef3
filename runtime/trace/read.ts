/** Reads `trace.jsonl`, reporting the line number of any line that is not a JSON object. */
import { readFileSync } from 'node:fs';

export interface TraceLine {
  event_type: string;
  session_id: string;
  timestamp: number;
  seq?: number;
  [k: string]: unknown;
}

export function readTrace(path: string): { events: TraceLine[]; bad: { line: number; text: string }[] } {
  const events: TraceLine[] = [];
  const bad: { line: number; text: string }[] = [];
  const lines = readFileSync(path, 'utf8').split('\n');
  lines.forEach((text, i) => {
    if (!text.trim()) return;
    try {
      const v = JSON.parse(text) as unknown;
      if (v && typeof v === 'object' && typeof (v as TraceLine).event_type === 'string') events.push(v as TraceLine);
      else bad.push({ line: i + 1, text });
    } catch {
      bad.push({ line: i + 1, text });
    }
  });
  return { events, bad };
}
