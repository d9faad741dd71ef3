/** clampGrant: a tool invoked by a capsule never gets more than the capsule component has. */
import { describe, expect, it } from 'vitest';
import type { EffectiveGrant } from '../../runtime/manifest/capsule.ts';
import { clampGrant } from '../../runtime/script/capsule.ts';

function grant(o: Partial<{ net: string[]; scope: string | null; env: string[]; shell: string[]; mem: number; deadline: number }>): EffectiveGrant {
  return {
    network: { allow: o.net ?? [] },
    filesystem: { scope: o.scope === undefined ? '.' : o.scope },
    ...(o.shell ? { shell: { allow: o.shell, stripEnv: [] } } : {}),
    env: { allow: o.env ?? [] },
    limits: { memoryBytes: o.mem ?? 512 * 1048576, deadlineSeconds: o.deadline ?? 600, hookDeadlineSeconds: 30 },
  };
}

describe('clampGrant', () => {
  it('keeps a grant that is already within the capsule’s', () => {
    const tool = grant({ net: ['https://api.example.com'], scope: 'data/tool', env: ['A'], mem: 64 << 20, deadline: 10 });
    const capsule = grant({ net: ['api.example.com'], scope: 'data', env: ['A', 'B'] });
    expect(clampGrant(tool, capsule)).toEqual(tool);
  });

  it('drops network entries, env names and shell binaries the capsule lacks', () => {
    const tool = grant({ net: ['https://api.example.com', 'evil.example.net', 'http://api.example.com:8080'], env: ['A', 'SECRET'], shell: ['git', 'curl'] });
    const capsule = grant({ net: ['https://api.example.com'], env: ['A'], shell: ['git'] });
    const c = clampGrant(tool, capsule);
    expect(c.network.allow).toEqual(['https://api.example.com']);
    expect(c.env.allow).toEqual(['A']);
    expect(c.shell?.allow).toEqual(['git']);
  });

  it('replaces a scope outside the capsule’s by the capsule’s, and takes the smaller limits', () => {
    const c = clampGrant(grant({ scope: '.', mem: 1 << 30, deadline: 900 }), grant({ scope: 'work', mem: 128 << 20, deadline: 60 }));
    expect(c.filesystem.scope).toBe('work');
    expect(c.limits).toEqual({ memoryBytes: 128 << 20, deadlineSeconds: 60, hookDeadlineSeconds: 30 });
    expect(clampGrant(grant({ scope: 'work/sub' }), grant({ scope: null })).filesystem.scope).toBeNull();
  });
});
