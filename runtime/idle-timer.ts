/**
 * One countdown to "idle": fires once `ms` pass without a touch, never keeps the process alive, and
 * with 0 ms never fires. Every part that lets something go while idle runs on one: the session's
 * component thread (host/thread.ts), the token counter's worker and its rank tables
 * (inference/tokens.ts). Each decides in its own `onIdle` whether it is still idle (a call may be
 * in flight) and touches the timer again if not.
 *
 * Why a class of its own: each of them kept a Timeout, cleared it, made it anew on every use and
 * unref'd it, three copies of the same few lines; a touch on a busy path now restarts the running
 * timer in place (Timeout.refresh) instead of allocating another.
 */
export class IdleTimer {
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ms: number,
    private readonly onIdle: () => void,
  ) {}

  /** Starts the countdown, or restarts it if it runs. */
  touch(): void {
    if (this.ms <= 0) return;
    if (this.#timer) {
      this.#timer.refresh();
      return;
    }
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.onIdle();
    }, this.ms);
    // Something idle must not keep a finished process alive.
    this.#timer.unref();
  }

  /** Stops the countdown (busy again, or closed). */
  cancel(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Whether the countdown runs. */
  get running(): boolean {
    return this.#timer !== undefined;
  }
}
