/** The JSON-RPC front door's nesting bound (front-door.ts `checkRpcBody`): 64 levels below the envelope's root pass, 65 do not. */
import { describe, expect, it } from 'vitest';
import { checkRpcBody } from '../../runtime/a2a/server/front-door.ts';

/** A tasks/get whose params carry `levels` containers, alternating objects and arrays, around a number. */
function nested(levels: number): string {
  let inner = '1';
  for (let i = 0; i < levels; i++) inner = i % 2 ? `[${inner}]` : `{"k":${inner}}`;
  return `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t","metadata":${inner}}}`;
}

const check = (raw: string) => checkRpcBody(raw, {}, '/', () => false);

describe('JSON nesting bound', () => {
  it('passes a body whose deepest container is at depth 63 and refuses one at depth 64, objects and arrays alike', () => {
    // The root is at depth 0, params at 1, metadata's first container at 2.
    expect(check(nested(62)).kind).toBe('call');
    const refused = check(nested(63));
    expect(refused).toMatchObject({
      kind: 'refuse',
      refusal: { body: { error: { code: -32600, message: expect.stringContaining('nests deeper than 64 levels') } } },
    });
    expect(check(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t","m":${'['.repeat(70)}${']'.repeat(70)}}}`).kind).toBe('refuse');
  });

  it('stops at the bound on a body nested far deeper than the stack would allow', () => {
    const deep = `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t","m":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}}`;
    expect(check(deep).kind).toBe('refuse');
  });

  it('walks only own keys: a "__proto__" key parsed as data is checked like any other', () => {
    const viaProto = `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t","__proto__":${'['.repeat(70)}${']'.repeat(70)}}}`;
    expect(check(viaProto).kind).toBe('refuse');
  });
});
