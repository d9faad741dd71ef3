/**
 * The steps of a capsule's task as `mur send` and `mur chat` print them. `mur serve` streams the
 * session's trace records of the task as `step` artifacts (docs/a2a.md, "What a stream carries"),
 * so each is printed with the line `mur run` prints for the same record (progress.ts `stepLine`).
 * A capsule whose stream has no steps (an older runtime) still sends a `working` status per turn
 * and a `tool-call` artifact per call; those are printed until the first step (`task_start`)
 * says the stream carries the steps, and skipped after it, so nothing is printed twice.
 * Response chunks are printed as they arrive, a whole line at a time; the answer at the end is
 * then only what the chunks have not already printed.
 */
import type { StepEvent } from '../client/stream-events.ts';
import { stepLine } from './progress.ts';

export class RemoteProgress {
  /** Set by the first `task_start` step: the stream carries the session's steps. */
  private steps = false;
  /** The response chunks since the last step: a turn's text (the last turn's is the answer). */
  private segment = '';
  /** Characters of `segment` printed so far. */
  private shown = 0;
  /** A step came after the segment: the next chunk starts a new one. */
  private boundary = false;

  constructor(
    private readonly label: string,
    private readonly out: (s: string) => void,
  ) {}

  /** The line of one stream event, or undefined for none (chunks go to `chunk`). */
  line(e: StepEvent): string | undefined {
    if (e.kind !== 'thinking' && e.kind !== 'response' && e.kind !== 'chunk') {
      // A turn's text streamed before a step (a model saying what it will do, then calling a
      // tool) is printed whole before the step's line; later chunks are another turn's.
      this.flush();
      if (this.segment !== '') this.boundary = true;
    }
    switch (e.kind) {
      case 'task':
        return `▶ task ${e.taskId} (a2a, ${this.label})`;
      case 'step':
        // The task's first line was printed from the stream's task event, which names the target.
        if (e.record.event_type === 'task_start') {
          this.steps = true;
          return undefined;
        }
        return stepLine(e.record);
      case 'turn':
        return this.steps ? undefined : `  turn ${e.turn}`;
      case 'tool':
        if (this.steps) return undefined;
        if (e.status === 'denied') return `    ⛔ ${e.tool} denied by a hook`;
        return stepLine({ event_type: 'tool_call', tool_name: e.tool, status: e.status, duration_ms: e.durationMs ?? '?' });
      case 'hook':
        return `    hook artifact: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}`;
      case 'lagged':
        return `  (stream lagged: ${e.dropped} step(s) not shown)`;
      case 'status':
        if (e.state === 'input-required') return `? ${e.text ?? '(the capsule asks for input)'}`;
        if (e.final) return `■ task ${e.state}${e.text && e.state !== 'completed' ? `: ${e.text}` : ''}`;
        return e.text ? `  ${e.state}: ${e.text}` : undefined;
      case 'reattached':
        return `  (the stream broke off; following task ${e.taskId} again)`;
      case 'artifact':
        return `    artifact ${e.name}: ${e.text ?? JSON.stringify(e.data)}`;
      default:
        // Thinking is not printed; chunks go to `chunk`; the closing response to `finish`.
        return undefined;
    }
  }

  /** A response chunk: its whole lines are printed now, the rest when its line ends. */
  chunk(text: string): void {
    if (this.boundary) {
      this.segment = '';
      this.shown = 0;
      this.boundary = false;
    }
    this.segment += text;
    const end = this.segment.lastIndexOf('\n');
    if (end < this.shown) return;
    this.out(this.segment.slice(this.shown, end));
    this.shown = end + 1;
  }

  private flush(): void {
    if (this.shown >= this.segment.length) return;
    this.out(this.segment.slice(this.shown));
    this.shown = this.segment.length;
  }

  /**
   * The end of the task: a completed task's answer, less what the last turn's chunks already
   * printed (the closing response replaces the chunks; when it says something else, it is
   * printed whole); for any other end, the chunk text still pending.
   */
  finish(completed: boolean, answer: string | undefined): void {
    if (!completed) {
      this.flush();
      return;
    }
    const full = answer ?? this.segment;
    const printed = this.segment.slice(0, this.shown);
    const rest = full.startsWith(printed) ? full.slice(printed.length) : undefined;
    // The rest continues what was printed only where a printed line ended.
    if (rest !== undefined && (printed === '' || rest === '' || printed.endsWith('\n'))) {
      if (rest !== '' || printed === '') this.out(rest);
      return;
    }
    this.out('  (the final answer differs from the text streamed above:)');
    this.out(full);
  }
}
