/**
 * Where `mur serve`'s start goes: wall and CPU time (all threads of the process) per phase, from
 * the process's start to the moment it serves, printed as one `start-up:` line. The image bench
 * (bench/images.ts) measures the start from outside; this line says which phase a change moved.
 */
export class StartupClock {
  private readonly phases: { name: string; wallMs: number; cpuMs: number }[] = [];
  private wall = 0;
  private cpu = 0;

  /** `first`: the phase from the process's start to now (module loading). */
  constructor(first = 'boot') {
    this.mark(first);
  }

  /** Ends the phase running since the previous mark, naming it. */
  mark(name: string): void {
    const wall = performance.now();
    const u = process.cpuUsage();
    const cpu = (u.user + u.system) / 1000;
    this.phases.push({ name, wallMs: wall - this.wall, cpuMs: cpu - this.cpu });
    this.wall = wall;
    this.cpu = cpu;
  }

  line(): string {
    const ms = (x: number) => x.toFixed(0);
    return `start-up: ${this.phases.map((p) => `${p.name} ${ms(p.wallMs)} ms (CPU ${ms(p.cpuMs)})`).join(', ')}; serving ${ms(this.wall)} ms after the process started, CPU ${ms(this.cpu)} ms`;
  }
}
