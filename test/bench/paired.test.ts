import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { choiceArg, countArg, numArg, pairedRecords } from '../../bench/paired.ts';

describe('bench options', () => {
  it('reads a numeric option, or gives the default when it is absent', () => {
    expect(numArg('rounds', 3, ['node', 'b.ts', '--rounds', '7'])).toBe(7);
    expect(numArg('rounds', 3, ['node', 'b.ts', '--tasks', '7'])).toBe(3);
  });

  it('stops with exit 2 naming the option when its value is not a positive number', () => {
    const code = `import { numArg } from './bench/paired.ts'; numArg('rounds', 3, ['x', '--rounds', 'many']);`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--rounds: expected a positive number, got 'many'");
  });

  it('reads a count option, 0 included (--steady 0 skips a window), or gives the default when it is absent', () => {
    expect(countArg('steady', 300, ['node', 'b.ts', '--steady', '0'])).toBe(0);
    expect(countArg('steady', 300, ['node', 'b.ts', '--steady', '40'])).toBe(40);
    expect(countArg('steady', 300, ['node', 'b.ts'])).toBe(300);
  });

  it('stops with exit 2 naming the count option when its value is not a whole number of 0 or more', () => {
    for (const bad of ['-1', '2.5', 'some', '']) {
      const code = `import { countArg } from './bench/paired.ts'; countArg('load', 0, ['x', '--load', ${JSON.stringify(bad)}]);`;
      const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8' });
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`--load: expected a whole number ≥ 0, got '${bad}'`);
    }
  });

  it('reads an option with a fixed set of values, or gives the default when it is absent', () => {
    expect(choiceArg('runtime', ['image', 'dist'], 'image', ['node', 'b.ts', '--runtime', 'dist'])).toBe('dist');
    expect(choiceArg('runtime', ['image', 'dist'], 'image', ['node', 'b.ts'])).toBe('image');
  });

  it('stops with exit 2 naming the option and its values when it gets another', () => {
    const code = `import { choiceArg } from './bench/paired.ts'; choiceArg('runtime', ['image', 'dist'], 'image', ['x', '--runtime', 'pod']);`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--runtime: expected image, dist, got 'pod'");
  });

  it("keeps each arm's round records in round order, the arms alternating (order reversed every other round)", async () => {
    const calls: string[] = [];
    const arm = (name: string) => ({
      name,
      run: async (r: number) => {
        calls.push(`${name}${r}`);
        return { name, round: r };
      },
    });
    const records = await pairedRecords([arm('a'), arm('b')], 3);
    expect(calls).toEqual(['a0', 'b0', 'b1', 'a1', 'a2', 'b2']);
    expect(records.get('a')).toEqual([0, 1, 2].map((round) => ({ name: 'a', round })));
    expect(records.get('b')).toEqual([0, 1, 2].map((round) => ({ name: 'b', round })));
  });
});
