/** `npm run bench [name ...]`: runs the benches and prints their figures. */
import { benchComponents } from './components.ts';

const all: Record<string, () => Promise<string>> = {
  components: benchComponents,
  loop: async () => (await import('./loop.ts')).benchLoop(),
};
const extra = ['a2a', 'hooks', 'telemetry', 'operator'];
const names = process.argv.slice(2).length ? process.argv.slice(2) : [...Object.keys(all), ...extra];
for (const n of names) {
  const t = performance.now();
  try {
    if (all[n]) console.log(await all[n]());
    else {
      const mod = (await import(`./${n}.ts`)) as { default?: () => Promise<string | void>; run?: () => Promise<string | void> };
      const f = mod.default ?? mod.run;
      if (f) {
        const out = await f();
        if (out) console.log(out);
      }
    }
  } catch (e) {
    console.log(`${n}: skipped (${(e as Error).message})`);
  }
  console.log(`  (${n}: ${((performance.now() - t) / 1000).toFixed(1)} s)\n`);
}
process.exit(0);
