/**
 * bench/serving.ts runs dist/ "as the image runs it": the Dockerfile's ENTRYPOINT node flags, except
 * a compiler-tier cap that means another tier on a V8 without Maglev by default (Node 20).
 */
import { describe, expect, it } from 'vitest';
import { entrypointFlags, imageProcess, maglevByDefault } from '../../bench/serving.ts';

describe("the image's node flags for a bench's dist/ arm", () => {
  it('Maglev is on by default from V8 11.7 (Node 22): Node 20’s V8 11.3 has it off', () => {
    expect(maglevByDefault('11.3.244.8-node.33')).toBe(false);
    expect(maglevByDefault('11.7.439.1')).toBe(true);
    expect(maglevByDefault('12.4.254.21-node.33')).toBe(true);
    expect(maglevByDefault('13.6.233.17-node.30')).toBe(true);
  });

  it('reads the ENTRYPOINT as written, and leaves --max-opt out only where it would cap at Sparkplug', () => {
    const written = entrypointFlags();
    expect(written).toContain('--max-semi-space-size=1');
    const capped = written.filter((f) => f.startsWith('--max-opt'));
    expect(capped.length).toBeGreaterThan(0);
    const run = imageProcess().nodeFlags;
    if (maglevByDefault()) expect(run).toEqual(written);
    else expect(run).toEqual(written.filter((f) => !f.startsWith('--max-opt')));
  });
});
