/**
 * A policy hook stops the runtime's own `delegate-task` tool the way it stops a WASM tool: the
 * decision point runs before anything leaves the capsule. The peer is a real HTTP server on
 * loopback that records every request; with the check in place it sees none.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { readTrace } from '../../runtime/trace/read.ts';
import type { Kit } from '../loop/kit.ts';
import { openHookCapsule } from './hook-capsule.ts';

let kit: Kit | undefined;
let peer: { url: string; requests: string[]; close(): Promise<void> } | undefined;
afterEach(async () => {
  await kit?.close();
  await peer?.close();
  kit = undefined;
  peer = undefined;
});

async function recordingPeer(): Promise<NonNullable<typeof peer>> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    res.statusCode = 404;
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('policy hooks and delegate-task', () => {
  it('a deny at the decision point stops a delegate-task call: no request reaches the peer, call_denied is traced', { timeout: 180_000 }, async () => {
    peer = await recordingPeer();
    kit = await openHookCapsule(
      [
        {
          name: 'guard',
          contract: 'binding: on-tool-call\ncommit_policy: deny\n',
          script: { 'on-tool-call:decision': { record: true, ret: { tag: 'deny', val: 'no delegation today' } }, 'on-tool-call:observe': { record: true } },
        },
      ],
      { turns: [{ toolCalls: [{ name: 'delegate-task', input: { peer: peer.url, task: 'summarize the report' } }] }, { text: 'done' }] },
      `capabilities:\n  network:\n    allow: ['${peer.url}']\n`,
    );
    expect(kit.session.toolInventory().map((t) => t.name)).toContain('delegate-task');
    const r = await kit.session.runTask({ taskId: 't1', contextId: 'ctx-d', text: 'delegate it', source: 'task_md' });
    expect(r.exit).toBe('completed');
    const events = readTrace(kit.session.staged.workdir.trace).events;
    expect(events.filter((e) => e.event_type === 'call_denied')).toEqual([
      expect.objectContaining({ hook: 'guard', reason: 'no delegation today', tool_name: 'delegate-task', kind: 'tool' }),
    ]);
    expect(peer.requests).toEqual([]);
    // The model was told why; the hook saw the exact input before anything ran.
    expect(JSON.stringify(kit.provider.requests[1]!.body)).toContain("Refused by policy hook 'guard': no delegation today");
  });
});
