import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { justRecipe, makeRecipe, resolveRecipe, shellEventIdentity } from '../../runtime/shell/index.ts';

let wd: string;
beforeEach(async () => {
  wd = await mkdtemp(path.join(os.tmpdir(), 'recipe-'));
});
afterEach(async () => {
  await rm(wd, { recursive: true, force: true });
});

const MAKEFILE = `CC := gcc
FLAGS = -O2 -Wall
.PHONY: build test

# the default goal
build: deps
\t@echo building
\t$(CC) $(FLAGS) -o app main.c \\
  extra.c

\t-rm -f tmp.o
test: build ; ./app --self-test
deploy: build
\tcurl -X POST https://example.invalid/deploy
build: CFLAGS += -g
`;

describe("recipe: make <target> → the target's recipe lines (GNUmakefile | makefile | Makefile)", () => {
  it("reads the named target's recipe lines from Makefile", async () => {
    await writeFile(path.join(wd, 'Makefile'), MAKEFILE);
    expect(await resolveRecipe(wd, 'make', ['build'])).toBe('@echo building\n$(CC) $(FLAGS) -o app main.c \\\n  extra.c\n-rm -f tmp.o');
    expect(await resolveRecipe(wd, 'make', ['deploy'])).toBe('curl -X POST https://example.invalid/deploy');
    expect(await resolveRecipe(wd, 'make', ['test'])).toBe('./app --self-test');
    expect(await resolveRecipe(wd, 'make', ['-j', '4', 'deploy', 'V=1'])).toBe('curl -X POST https://example.invalid/deploy');
  });

  it('no target named → the default goal', async () => {
    await writeFile(path.join(wd, 'Makefile'), MAKEFILE);
    expect(await resolveRecipe(wd, 'make', [])).toMatch(/^@echo building/);
  });

  it('file order: GNUmakefile, then makefile, then Makefile', async () => {
    await writeFile(path.join(wd, 'Makefile'), 'x:\n\techo Makefile\n');
    expect(await resolveRecipe(wd, 'make', ['x'])).toBe('echo Makefile');
    await writeFile(path.join(wd, 'makefile'), 'x:\n\techo makefile\n');
    // case-insensitive filesystems cannot hold both; only check when they coexist
    const lower = await resolveRecipe(wd, 'make', ['x']);
    expect(['echo makefile', 'echo Makefile']).toContain(lower);
    await writeFile(path.join(wd, 'GNUmakefile'), 'x:\n\techo GNUmakefile\n');
    expect(await resolveRecipe(wd, 'make', ['x'])).toBe('echo GNUmakefile');
  });

  it('absent: no makefile, unknown target, or an option that reads another makefile/directory', async () => {
    expect(await resolveRecipe(wd, 'make', ['build'])).toBeUndefined();
    await writeFile(path.join(wd, 'Makefile'), MAKEFILE);
    expect(await resolveRecipe(wd, 'make', ['nope'])).toBeUndefined();
    expect(await resolveRecipe(wd, 'make', ['-f', 'other.mk', 'build'])).toBeUndefined();
    expect(await resolveRecipe(wd, 'make', ['-C', 'sub', 'build'])).toBeUndefined();
    expect(await resolveRecipe(wd, 'make', ['--file=other.mk', 'build'])).toBeUndefined();
    expect(await resolveRecipe(wd, 'make', ['--eval=x:', 'build'])).toBeUndefined();
  });

  it('makeRecipe parses assignments and rules apart', () => {
    expect(makeRecipe('A := b:c\nall:\n\techo $(A)\n', ['all'])).toBe('echo $(A)');
    expect(makeRecipe('A ::= x\nall: ; @true\n', ['all'])).toBe('@true');
  });
});

const JUSTFILE = `set shell := ["bash", "-c"]
alias b := build
version := "1.0"

# Build it
[private]
build target="release": lint
    echo "building {{target}}"
    cargo build --{{target}}

    echo done
@lint:
\tcargo clippy
`;

describe('recipe: just <recipe> → the indented body (justfile | .justfile | Justfile | JUSTFILE)', () => {
  it("reads the recipe's indented body, dedented", async () => {
    await writeFile(path.join(wd, 'justfile'), JUSTFILE);
    expect(await resolveRecipe(wd, 'just', ['build'])).toBe('echo "building {{target}}"\ncargo build --{{target}}\n\necho done');
    expect(await resolveRecipe(wd, 'just', ['lint'])).toBe('cargo clippy');
    expect(await resolveRecipe(wd, 'just', ['b', 'debug'])).toMatch(/^echo "building/); // alias
    expect(await resolveRecipe(wd, 'just', [])).toMatch(/^echo "building/); // first recipe
  });

  it('file order: justfile, .justfile, Justfile, JUSTFILE', async () => {
    await writeFile(path.join(wd, 'JUSTFILE'), 'r:\n  echo JUSTFILE\n');
    expect(await resolveRecipe(wd, 'just', ['r'])).toBe('echo JUSTFILE');
    await writeFile(path.join(wd, '.justfile'), 'r:\n  echo dot\n');
    expect(await resolveRecipe(wd, 'just', ['r'])).toBe('echo dot');
    await writeFile(path.join(wd, 'justfile'), 'r:\n  echo justfile\n');
    expect(await resolveRecipe(wd, 'just', ['r'])).toBe('echo justfile');
  });

  it('absent: no justfile, unknown recipe, or --justfile/--working-directory', async () => {
    expect(await resolveRecipe(wd, 'just', ['build'])).toBeUndefined();
    await writeFile(path.join(wd, 'justfile'), JUSTFILE);
    expect(await resolveRecipe(wd, 'just', ['version'])).toBeUndefined();
    expect(await resolveRecipe(wd, 'just', ['--justfile', 'x', 'build'])).toBeUndefined();
    expect(await resolveRecipe(wd, 'just', ['-d', 'sub', 'build'])).toBeUndefined();
    expect(justRecipe(JUSTFILE, 'missing')).toBeUndefined();
  });
});

describe('recipe: npm run <script> → the script body from package.json scripts', () => {
  it('reads scripts[name]', async () => {
    await writeFile(path.join(wd, 'package.json'), JSON.stringify({ scripts: { build: 'tsc -p .', test: 'vitest run' } }));
    expect(await resolveRecipe(wd, 'npm', ['run', 'build'])).toBe('tsc -p .');
    expect(await resolveRecipe(wd, 'npm', ['run-script', '--silent', 'test', '--', '--watch'])).toBe('vitest run');
  });

  it('absent: no package.json, unknown script, not a run, or another prefix/workspace', async () => {
    expect(await resolveRecipe(wd, 'npm', ['run', 'build'])).toBeUndefined();
    await writeFile(path.join(wd, 'package.json'), JSON.stringify({ scripts: { build: 'tsc' } }));
    expect(await resolveRecipe(wd, 'npm', ['run', 'nope'])).toBeUndefined();
    expect(await resolveRecipe(wd, 'npm', ['install'])).toBeUndefined();
    expect(await resolveRecipe(wd, 'npm', ['--prefix', 'sub', 'run', 'build'])).toBeUndefined();
    expect(await resolveRecipe(wd, 'npm', ['run', '--workspace=a', 'build'])).toBeUndefined();
    await writeFile(path.join(wd, 'package.json'), '{not json');
    expect(await resolveRecipe(wd, 'npm', ['run', 'build'])).toBeUndefined();
  });
});

describe('recipe on the shell-event identity', () => {
  it('is carried by shellEventIdentity for make/just/npm and absent otherwise', async () => {
    await mkdir(path.join(wd, 'sub'));
    await writeFile(path.join(wd, 'justfile'), JUSTFILE);
    const id = await shellEventIdentity({ binary: 'just', args: ['lint'], workdir: wd, env: { PATH: process.env.PATH } });
    expect(id.recipe).toBe('cargo clippy');
    expect(id.argv).toEqual(['lint']);
    const other = await shellEventIdentity({ binary: 'echo', args: ['lint'], workdir: wd, env: { PATH: process.env.PATH } });
    expect('recipe' in other).toBe(false);
  });
});
