/**
 * Many replicas behind one Service (issue 13 §2): three `mur serve` processes on one real
 * PostgreSQL store, behind a round-robin front (a real HTTP proxy that sends each request to the
 * next replica in turn, as a Service's load balancing may). Every A2A method works whichever
 * replica gets it: tasks/get, ListTasks, tasks/cancel (reaching the replica that runs the task),
 * resubscribe (the events of a task running elsewhere), the reply to an input-required task (to
 * the replica whose session waits; blocking and streamed), and a threaded follow-up in the same
 * context whose history was written by other replicas. Also: a replica that starts later leaves
 * the others' running tasks alone, and a task whose replica is killed with -9 is failed, saying the
 * runtime restarted, by the replica that is asked about it. Each step asserts that the request landed
 * on another replica than the one running the task. Real processes, real HTTP, no sleeps: the
 * test waits on the provider's request arrivals and on stream events.
 */
import http from 'node:http';
import pg from 'pg';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, PROBE_TOOL, capsuleYaml, driverDef, makeRegistry, tmp } from '../loop/kit.ts';
import { startScriptedProvider, type ScriptTurn, type ScriptedProvider } from '../provider/scripted-provider.ts';
import { msg10, rpc, V1 } from '../a2a/helpers.ts';
import { gate, serve, type Served } from './serve-kit.ts';
import { startPostgres, type Postgres } from '../support/postgres.ts';

/** A round-robin front: request n goes to upstream n mod N; which one served it is logged. */
async function roundRobin(upstreams: string[]): Promise<{ url: string; log: number[]; close(): Promise<void> }> {
  const log: number[] = [];
  let n = 0;
  const srv = http.createServer((req, res) => {
    const i = n++ % upstreams.length;
    log.push(i);
    const up = new URL(upstreams[i]!);
    const fwd = http.request({ host: up.hostname, port: up.port, path: req.url, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, { ...r.headers, 'x-upstream': String(i) });
      r.pipe(res);
    });
    fwd.on('error', (e) => {
      res.statusCode = 502;
      res.end(String(e));
    });
    req.pipe(fwd);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/`,
    log,
    close: () =>
      new Promise<void>((r) => {
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  };
}

/** A JSON-RPC streaming call read event by event: `onEvent` sees each one as it arrives. */
async function stream(url: string, method: string, params: unknown, onEvent: (ev: any) => void = () => undefined): Promise<any[]> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...V1 },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const events: any[] = [];
  const dec = new TextDecoder();
  let buf = '';
  for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
    buf += dec.decode(chunk, { stream: true });
    let at: number;
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, at);
      buf = buf.slice(at + 2);
      const data = frame
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('');
      if (!data) continue;
      const ev = JSON.parse(data);
      events.push(ev);
      onEvent(ev);
    }
  }
  return events;
}

const turns: ScriptTurn[] = [];
let pgServer: Postgres;
let storeUrl = '';
let startReplica: () => Promise<Served>;
let provider: ScriptedProvider;
let replicas: Served[] = [];
let front: Awaited<ReturnType<typeof roundRobin>>;
const cleanup: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  pgServer = await startPostgres();
  const url = await pgServer.url('murmur_replicas');
  storeUrl = url;
  // One provider for the three replicas, its script appended to by each test before it sends.
  provider = await startScriptedProvider({ turns });
  const registry = await makeRegistry([driverDef('anthropic'), PROBE_TOOL]);
  const dir = tmp('replicas-');
  writeFileSync(
    join(dir, 'murmur.yaml'),
    capsuleYaml({ name: 'many', tools: [PROBE_TOOL.name], extra: 'lifecycle:\n  conversation: threaded\n  task_acceptance: queue\n  queue_depth: 4\n' }),
  );
  // Started together, as a Deployment's pods are: their migrations of the one database take turns.
  startReplica = () =>
    serve(dir, {
      registry,
      workRoot: tmp('replicas-work-'),
      env: { MURMUR_INFERENCE_ENDPOINT: provider.url, MURMUR_INFERENCE_API_KEY: API_KEY },
      args: ['--store', url],
    });
  replicas = await Promise.all([0, 1, 2].map(() => startReplica()));
  front = await roundRobin(replicas.map((r) => r.url));
}, 240_000);

afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
  await front?.close();
  for (const r of replicas) await r.stop();
  await provider?.stop();
  await pgServer?.stop();
});

/** One JSON-RPC call through the front; returns its result (or error) and the replica that served it. */
async function call(method: string, params: unknown): Promise<{ result: any; error: any; replica: number }> {
  const r = await rpc(front.url, method, params, V1);
  return { result: r.body.result, error: r.body.error, replica: front.log.at(-1)! };
}

function taskOf(result: any): any {
  return result?.task ?? result;
}

function responseText(task: any): string {
  return (task.artifacts ?? []).flatMap((a: any) => a.parts.map((p: any) => p.text ?? '')).join('');
}

describe('three mur serve replicas on one PostgreSQL store, behind a round-robin front', () => {
  it('each replica joined the replica bus with its own id', () => {
    const ids = replicas.map((r) => /replica (\d+)/.exec(r.output())?.[1]);
    expect(ids.every(Boolean)).toBe(true);
    expect(new Set(ids).size).toBe(3);
  });

  it('tasks/get and ListTasks on another replica answer for a task that one replica ran', async () => {
    turns.push({ text: 'the first answer' });
    const sent = await call('SendMessage', { message: msg10('one') });
    const task = taskOf(sent.result);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    const got = await call('GetTask', { id: task.id });
    expect(got.replica).not.toBe(sent.replica);
    expect(got.result.status.state).toBe('TASK_STATE_COMPLETED');
    expect(responseText(got.result)).toBe('the first answer');
    const listed = await call('ListTasks', { includeArtifacts: true });
    expect(listed.replica).not.toBe(sent.replica);
    const mine = (listed.result.tasks as any[]).find((t) => t.id === task.id);
    expect(mine.status.state).toBe('TASK_STATE_COMPLETED');
    expect(responseText(mine)).toBe('the first answer');
  });

  it('tasks/cancel on another replica reaches the replica running the task and cancels it there', async () => {
    const g = gate();
    cleanup.push(async () => g.open());
    turns.push({ hold: g.hold, text: 'never delivered' });
    const sent = await call('SendMessage', { message: msg10('take your time'), configuration: { returnImmediately: true } });
    const id = taskOf(sent.result).id;
    await g.arrival; // the runner is in its provider call
    const canceled = await call('CancelTask', { id });
    expect(canceled.replica).not.toBe(sent.replica);
    expect(canceled.error).toBeUndefined();
    expect(canceled.result.status.state).toBe('TASK_STATE_CANCELED');
    const got = await call('GetTask', { id });
    expect(got.replica).not.toBe(sent.replica);
    expect(got.result.status.state).toBe('TASK_STATE_CANCELED');
    // Canceling again, anywhere: the task has ended.
    const again = await call('CancelTask', { id });
    expect(again.error?.message).toMatch(/cannot be canceled/);
  });

  it('resubscribe on another replica streams the events of the task running elsewhere, to its final status', async () => {
    const g = gate();
    cleanup.push(async () => g.open());
    turns.push({ hold: g.hold, text: 'streamed from afar' });
    const sent = await call('SendMessage', { message: msg10('stream it'), configuration: { returnImmediately: true } });
    const id = taskOf(sent.result).id;
    await g.arrival;
    const events = await stream(front.url, 'SubscribeToTask', { id }, (ev) => {
      // The first event is the task as it is now; then the provider may answer.
      if (ev.result?.task) g.open();
    });
    expect(front.log.at(-1)).not.toBe(sent.replica);
    expect(events[0].result.task.id).toBe(id);
    expect(events[0].result.task.status.state).toBe('TASK_STATE_WORKING');
    const last = events.at(-1).result;
    expect(last.statusUpdate.status.state).toBe('TASK_STATE_COMPLETED');
    const text = events.map((e) => e.result?.artifactUpdate?.artifact?.parts?.map((p: any) => p.text).join('') ?? '').join('');
    expect(text).toContain('streamed from afar');
  });

  it('the reply to an input-required task, sent to another replica, reaches the session waiting for it (blocking, then streamed)', async () => {
    turns.push({ toolCalls: [{ name: 'probe', input: { op: 'ask', prompt: 'Which colour?' } }] }, { text: 'painted blue' });
    const asked = await call('SendMessage', { message: msg10('paint it') });
    const task = taskOf(asked.result);
    expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const replied = await call('SendMessage', { message: msg10('blue', { taskId: task.id, contextId: task.contextId }) });
    expect(replied.replica).not.toBe(asked.replica);
    expect(replied.error).toBeUndefined();
    expect(taskOf(replied.result).status.state).toBe('TASK_STATE_COMPLETED');
    expect(responseText(taskOf(replied.result))).toBe('painted blue');
    // The waiting tool got the answer: it went back to the provider as the tool's result.
    expect(JSON.stringify(provider.requests.at(-1)!.body)).toContain('blue');

    turns.push({ toolCalls: [{ name: 'probe', input: { op: 'ask', prompt: 'Which shade?' } }] }, { text: 'painted green' });
    const asked2 = await call('SendMessage', { message: msg10('paint it again') });
    const t2 = taskOf(asked2.result);
    expect(t2.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const events = await stream(front.url, 'SendStreamingMessage', { message: msg10('green', { taskId: t2.id, contextId: t2.contextId }) });
    expect(front.log.at(-1)).not.toBe(asked2.replica);
    expect(events[0].result.task.id).toBe(t2.id);
    expect(events.at(-1).result.statusUpdate.status.state).toBe('TASK_STATE_COMPLETED');
    const got = await call('GetTask', { id: t2.id });
    expect(responseText(got.result)).toBe('painted green');
  });

  it('a threaded follow-up on another replica continues the context, with the history every replica wrote', async () => {
    turns.push({ text: 'noted: lantern' }, { text: 'noted: harbour' }, { text: 'noted: willow' }, { text: 'lantern, harbour, willow' });
    const first = await call('SendMessage', { message: msg10('remember the word lantern') });
    const contextId = taskOf(first.result).contextId;
    const seen = [first.replica];
    for (const word of ['harbour', 'willow']) {
      const r = await call('SendMessage', { message: msg10(`remember the word ${word}`, { contextId }) });
      expect(taskOf(r.result).status.state).toBe('TASK_STATE_COMPLETED');
      seen.push(r.replica);
    }
    // The fourth lands on the replica of the first again: what it held of the context is stale.
    const last = await call('SendMessage', { message: msg10('which words?', { contextId }) });
    seen.push(last.replica);
    expect(new Set(seen.slice(0, 3)).size).toBe(3);
    expect(responseText(taskOf(last.result))).toBe('lantern, harbour, willow');
    const body = JSON.stringify(provider.requests.at(-1)!.body);
    const order = [
      'remember the word lantern',
      'noted: lantern',
      'remember the word harbour',
      'noted: harbour',
      'remember the word willow',
      'noted: willow',
      'which words?',
    ];
    const at = order.map((s) => body.indexOf(s));
    expect(at.every((i) => i >= 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    // Each message once: histories appended by three writers, no duplicates.
    expect(body.split('remember the word harbour').length).toBe(2);
  });

  it('a replica that starts while another runs a task leaves that task running: its sweep fails only tasks of replicas that are gone', async () => {
    const g = gate();
    cleanup.push(async () => g.open());
    turns.push({ hold: g.hold, text: 'finished despite the newcomer' });
    const sent = await call('SendMessage', { message: msg10('long one'), configuration: { returnImmediately: true } });
    const id = taskOf(sent.result).id;
    await g.arrival;
    const newcomer = await startReplica();
    cleanup.push(() => newcomer.stop());
    expect(newcomer.output()).toMatch(/store: postgres [^\n]*replica \d+/);
    expect(newcomer.output()).not.toMatch(/unfinished task/);
    // The task still runs on its replica and completes there; the newcomer sees it completed.
    const events = await stream(replicas[sent.replica]!.url, 'SubscribeToTask', { id }, (ev) => {
      if (ev.result?.task) g.open();
    });
    expect(events.at(-1).result.statusUpdate.status.state).toBe('TASK_STATE_COMPLETED');
    const seen = await rpc(newcomer.url, 'GetTask', { id }, V1);
    expect(responseText(seen.body.result)).toBe('finished despite the newcomer');
  });

  it('a replica killed with -9 mid-task: another replica answers tasks/get with the task failed, saying the runtime restarted', async () => {
    const g = gate();
    cleanup.push(async () => g.open());
    turns.push({ hold: g.hold, text: 'never delivered' });
    const sent = await call('SendMessage', { message: msg10('doomed'), configuration: { returnImmediately: true } });
    const id = taskOf(sent.result).id;
    await g.arrival;
    const victim = replicas[sent.replica]!;
    const victimId = /replica (\d+)/.exec(victim.output())![1]!;
    victim.proc.kill('SIGKILL');
    await victim.exited;
    // Wait for PostgreSQL to see the victim's connection gone: its advisory lock becomes ours.
    const admin = new pg.Client({ connectionString: storeUrl });
    await admin.connect();
    await admin.query('SELECT pg_advisory_lock($1::int, $2::int)', [0x4d555231, Number(victimId)]);
    await admin.end(); // releases it again
    const survivor = replicas[(sent.replica + 1) % replicas.length]!;
    const got = await rpc(survivor.url, 'GetTask', { id }, V1);
    expect(got.body.result.status.state).toBe('TASK_STATE_FAILED');
    expect(JSON.stringify(got.body.result.status.message)).toMatch(/runtime restarted/);
    const cancel = await rpc(survivor.url, 'CancelTask', { id }, V1);
    expect(cancel.body.error?.message).toMatch(/cannot be canceled/);
  });
});
