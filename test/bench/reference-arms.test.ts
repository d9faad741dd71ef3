/**
 * The options the reference benches share (bench/reference-arms.ts): `--ours-flags` / `--arm`
 * variants of this runtime, `--one-turn`'s task shape, and the check that the reference's binary, its fixtures and dist/ are
 * there before anything starts.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ONE_TURN, TASK_TURNS, flagArms, windowTurns } from '../../bench/reference-arms.ts';

/** Runs `code` (an ES module importing bench/reference-arms.ts) in a node of its own, with `env`. */
function run(code: string, env: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH!, ...env },
  });
}

describe('flagArms', () => {
  it('makes one arm per repeated option: node flags, and upper-case NAME=value words as its environment', () => {
    const argv = ['node', 'b.ts', '--rounds', '2', '--arm', 'sgc=--single-threaded-gc --max-opt=2', '--arm', 'keep=MURMUR_COMPONENT_IDLE_MS=600000 --trace-gc'];
    expect(flagArms('arm', argv)).toEqual([
      { name: 'sgc', nodeFlags: ['--single-threaded-gc', '--max-opt=2'], env: {} },
      { name: 'keep', nodeFlags: ['--trace-gc'], env: { MURMUR_COMPONENT_IDLE_MS: '600000' } },
    ]);
    expect(flagArms('ours-flags', argv)).toEqual([]);
  });

  it('stops with exit 2 naming the option when a value is not name=<flags>', () => {
    const r = run(`import { flagArms } from './bench/reference-arms.ts'; flagArms('arm', ['x', '--arm', '--single-threaded-gc']);`);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--arm: expected 'name=<node flags>', got '--single-threaded-gc'");
  });
});

describe('windowTurns', () => {
  it('makes the windows one provider turn a task with --one-turn, a tool turn and the answer without it', () => {
    const one = windowTurns(['node', 'b.ts', '--rounds', '2', '--one-turn']);
    expect(one.turns).toBe(ONE_TURN);
    expect(one.turns).toEqual([{ text: 'done' }]);
    expect(one.label).toContain('one provider turn');
    const tool = windowTurns(['node', 'b.ts', '--rounds', '2']);
    expect(tool.turns).toBe(TASK_TURNS);
    expect(tool.turns.map((t) => ('toolCalls' in t ? 'tool' : 'text'))).toEqual(['tool', 'text']);
    expect(tool.label).toContain('tool turn');
  });
});

describe('referenceInputs', () => {
  it('stops with exit 1 naming both variables to set when neither is', () => {
    const r = run(`import { referenceInputs } from './bench/reference-arms.ts'; referenceInputs('warmup bench');`);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('warmup bench: cannot run; set:');
    expect(r.stderr).toMatch(/MURMUR_REFERENCE_FIXTURES=.*now unset/);
    expect(r.stderr).toMatch(/MURMUR_REFERENCE_BIN=.*now unset; or pass --ours-only/);
  });

  it('names a binary that is not there, and asks nothing of it for --ours-only', () => {
    const missing = run(`import { referenceInputs } from './bench/reference-arms.ts'; referenceInputs('reference bench');`, {
      MURMUR_REFERENCE_BIN: '/nonexistent/mur',
    });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain("now '/nonexistent/mur' (no such file)");
    const oursOnly = run(`import { referenceInputs } from './bench/reference-arms.ts'; referenceInputs('reference bench', true);`, {
      MURMUR_REFERENCE_BIN: '/nonexistent/mur',
    });
    expect(oursOnly.stderr).not.toContain('MURMUR_REFERENCE_BIN');
  });
});
