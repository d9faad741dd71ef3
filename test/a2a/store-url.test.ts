/** `--store` values (runtime/a2a/store/store.ts parseStoreUrl): which store each names, and refusals that never echo a password. */
import { describe, expect, it } from 'vitest';
import { parseStoreUrl } from '../../runtime/a2a/store/store.ts';

describe('parseStoreUrl', () => {
  it.each([
    ['sqlite:/var/lib/murmur/a.db', { kind: 'sqlite', url: 'sqlite:/var/lib/murmur/a.db', where: '/var/lib/murmur/a.db' }],
    ['sqlite://rel/a.db', { kind: 'sqlite', url: 'sqlite:/work/rel/a.db', where: '/work/rel/a.db' }],
    ['./a.db', { kind: 'sqlite', url: 'sqlite:/work/a.db', where: '/work/a.db' }],
    ['postgresql://u:secret@db:5432/tasks', { kind: 'postgres', url: 'postgresql://u:secret@db:5432/tasks', where: 'postgresql://db:5432/tasks' }],
    ['postgres://db/tasks', { kind: 'postgres', url: 'postgres://db/tasks', where: 'postgresql://db/tasks' }],
  ])('%s', (value, want) => {
    expect(parseStoreUrl(value, '/work')).toEqual(want);
  });

  it('refuses what is neither, with E-STORE-001 and without the password', () => {
    for (const v of ['mysql://u:hunter2@h/db', 'sqlite:', '']) {
      let err: unknown;
      try {
        parseStoreUrl(v, '/work');
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({ code: 'E-STORE-001' });
      expect(String((err as Error).message)).not.toContain('hunter2');
    }
  });
});
