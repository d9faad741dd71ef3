/** The runtime-provided delegate-task tool. */
import { afterAll, describe, expect, it } from 'vitest';
import { delegateTaskTool, runDelegateTask } from '../../runtime/a2a/peers/delegate-task.ts';
import { closeAll, rpc, serve } from './helpers.ts';
import { createAuthenticator } from '../../runtime/a2a/server/auth.ts';

afterAll(closeAll);

const hostPort = (url: string) => new URL(url).host;

describe('delegate-task', () => {
  it('is offered only when the allowlist names peers', () => {
    expect(delegateTaskTool([])).toBeUndefined();
    expect(delegateTaskTool(['  '])).toBeUndefined();
    const t = delegateTaskTool(['summarizer:7001']);
    expect(t?.name).toBe('delegate-task');
    expect(t?.inputSchema).toMatchObject({ required: ['peer', 'task'] });
    expect(t?.description).toContain('summarizer:7001');
  });

  it('an entry a component claims (a tool’s API, the driver’s provider, the inference endpoint) is not a peer', () => {
    // Only API destinations: no delegate-task at all.
    expect(
      delegateTaskTool(['https://api.anthropic.com', 'api.search.internal:8443'], {
        entries: ['api.search.internal:8443'],
        endpoint: 'https://api.anthropic.com',
      }),
    ).toBeUndefined();
    // A peer beside them is offered, and only it is advertised.
    const t = delegateTaskTool(['https://api.anthropic.com', 'api.search.internal:8443', 'http://researcher.default.svc.cluster.local:8080'], {
      entries: ['API.search.internal:8443'],
      endpoint: 'https://api.anthropic.com/v1',
    });
    expect(t?.description).toContain('Allowed peers: http://researcher.default.svc.cluster.local:8080.');
    expect(t?.description).not.toContain('anthropic');
    expect(t?.description).not.toContain('api.search.internal');
  });

  it('sends, follows to completion and returns the peer result text', async () => {
    const s = await serve(
      async (ctx, ev) => {
        ev.textChunk('partial ');
        return { state: 'completed', text: `summary of ${ctx.text} (${ctx.origin}/${ctx.trust})` };
      },
      { auth: createAuthenticator({ apiKeys: [{ name: 'caller', key: 'k-caller' }], anonymous: true, trustedCallers: ['apikey:caller'] }) },
    );
    const credentials = (url: string) => (url.startsWith(s.url) ? 'k-caller' : undefined);
    const r = await runDelegateTask({ peer: s.url, task: 'the report' }, { allow: [hostPort(s.url)], trust: 'trusted', credentials });
    expect(r).toMatchObject({ isError: false, state: 'completed', text: 'summary of the report (peer/trusted)' });
    // With the credential, an untrusted task still delegates only untrusted.
    const low = await runDelegateTask({ peer: s.url, task: 'the report' }, { allow: [hostPort(s.url)], trust: 'untrusted', credentials });
    expect(low).toMatchObject({ isError: false, text: 'summary of the report (peer/untrusted)' });
    // Without this capsule's credential the peer hears the claim from an anonymous caller: untrusted.
    const anon = await runDelegateTask({ peer: s.url, task: 'the report' }, { allow: [hostPort(s.url)], trust: 'trusted' });
    expect(anon).toMatchObject({ isError: false, text: 'summary of the report (peer/untrusted)' });
    // A peer given without a scheme is reached over http.
    const r2 = await runDelegateTask({ peer: hostPort(s.url), task: 'x' }, { allow: [hostPort(s.url)], trust: 'untrusted' });
    expect(r2).toMatchObject({ isError: false, text: 'summary of x (peer/untrusted)' });
  });

  it('refuses peers outside the allowlist with the policy error', async () => {
    const r = await runDelegateTask({ peer: 'http://127.0.0.1:9/', task: 'x' }, { allow: ['other:1'], trust: 'trusted' });
    expect(r).toEqual({ isError: true, text: "network policy: 'http://127.0.0.1:9/' not in capabilities.network.allow" });
  });

  it('reports a failed peer task as an error and input-required as a question', async () => {
    const failing = await serve(async () => ({ state: 'failed', reason: 'no data' }));
    const f = await runDelegateTask({ peer: failing.url, task: 'x' }, { allow: [hostPort(failing.url)], trust: 'trusted' });
    expect(f.isError).toBe(true);
    expect(f.text).toMatch(/failed: no data$/);
    const asking = await serve(async (_c, ev) => ({ state: 'completed', text: await ev.requestInput('which year?') }));
    const q = await runDelegateTask({ peer: asking.url, task: 'x' }, { allow: [hostPort(asking.url)], trust: 'trusted' });
    expect(q).toMatchObject({ isError: false, state: 'input-required' });
    expect(q.text).toContain('which year?');
  });

  it('is bounded by the delegation deadline; the peer task is then canceled', async () => {
    const s = await serve((ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve({ state: 'canceled' }))));
    // The peer never finishes on its own: only the deadline ends the call (a broken bound hangs and fails by timeout).
    const r = await runDelegateTask({ peer: s.url, task: 'forever' }, { allow: [hostPort(s.url)], trust: 'trusted', deadlineSecs: 0.3 });
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(/deadline of 0.3s exceeded/);
    const got = await rpc(s.url, 'tasks/get', { id: r.taskId });
    expect(got.body.result.status.state).toBe('canceled');
  });

  it('rejects malformed input', async () => {
    expect(await runDelegateTask({ peer: 'x' }, { allow: ['x'], trust: 'trusted' })).toMatchObject({ isError: true });
    expect(await runDelegateTask(null, { allow: ['x'], trust: 'trusted' })).toMatchObject({ isError: true });
  });
});
