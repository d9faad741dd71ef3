/**
 * The console's JSON and server-sent-events API, each call made with the viewer's identity:
 * the kubeconfig's user for the cluster (client-node), and for a capsule the token `mur send`
 * would get (runtime/client). What the viewer's RBAC refuses is not shown.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import { isMurError, MurError } from '../errors.ts';
import { userMessage } from '../client/message.ts';
import { outcomeOf, sendAndFollow } from '../client/task-calls.ts';
import type { Agents } from './agents.ts';
import { ApiFailure, capsuleEvents, listCapsules, readCapsule } from './capsules.ts';
import type { StreamedSteps } from './streamed.ts';
import { liveSteps, timelineOf } from './timeline.ts';

export interface ApiContext {
  /** The viewer's kubeconfig, or why there is none (a console for A2A URLs only). */
  kc: KubeConfig | { error: string };
  agents: Agents;
  urls: string[];
  /** The steps of the tasks this console sent, as streamed (the capsule does not keep them). */
  streamed: StreamedSteps;
}

/** A message body is small: a line of chat. */
const MAX_BODY = 64 * 1024;

function json(res: ServerResponse, status: number, body: unknown): void {
  const s = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(s);
}

/** The error shape every call answers with: the message, its stable code, the hint. */
export function errorBody(e: unknown): { error: string; code?: string; hint?: string } {
  if (isMurError(e)) return { error: e.message, code: e.code, ...(e.hint ? { hint: e.hint } : {}) };
  if (e instanceof ApiFailure) return { error: `the API server failed while ${e.message}`, code: 'E-CLI-039' };
  return { error: (e as Error)?.message ?? String(e) };
}

function badRequest(message: string): MurError {
  return new MurError('E-CLI-053', message, { hint: 'the console page sends these; is the page from this console run?' });
}

function param(url: URL, name: string): string {
  const v = url.searchParams.get(name);
  if (!v) throw badRequest(`query parameter '${name}' is missing`);
  return v;
}

function cluster(ctx: ApiContext): KubeConfig {
  if ('error' in ctx.kc) throw new MurError('E-CLI-039', ctx.kc.error, { hint: 'mur console --kubeconfig FILE, or $KUBECONFIG' });
  return ctx.kc;
}

async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) throw badRequest(`request body over ${MAX_BODY} bytes`);
    chunks.push(c as Buffer);
  }
  try {
    const v = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // said below
  }
  throw badRequest('request body is not a JSON object');
}

/** GET /api/agents: the Capsules the viewer can list, and the A2A URLs named at start. */
async function agents(ctx: ApiContext): Promise<unknown> {
  const urls = ctx.urls.map((u) => ({ ref: `url:${u}`, url: u }));
  if ('error' in ctx.kc) return { capsules: [], scope: 'none', refused: [], clusterError: ctx.kc.error, urls };
  const list = await listCapsules(ctx.kc);
  return { ...list, capsules: list.capsules.map((c) => ({ ...c, ref: `capsule:${c.namespace}/${c.name}` })), urls };
}

/** GET /api/capsule?namespace=&name=: one Capsule with its conditions and recent events. */
async function capsule(ctx: ApiContext, url: URL): Promise<[number, unknown]> {
  const kc = cluster(ctx);
  const namespace = param(url, 'namespace');
  const name = param(url, 'name');
  const c = await readCapsule(kc, namespace, name);
  if (!c) return [404, { error: `Capsule ${namespace}/${name} is not there or your RBAC does not let you read it`, code: 'E-CLI-035' }];
  const events = await capsuleEvents(kc, namespace, name);
  return [200, { capsule: { ...c, ref: `capsule:${namespace}/${name}` }, events: events ?? null }];
}

/** POST /api/send {agent, text, contextId?}: the task's steps as server-sent events, then its outcome. */
async function send(ctx: ApiContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readBody(req);
  const agent = typeof body.agent === 'string' ? body.agent : '';
  const text = typeof body.text === 'string' ? body.text.trim() : '';
  if (!agent) throw badRequest("field 'agent' is missing");
  if (!text) throw badRequest("field 'text' is missing or empty");
  const contextId = typeof body.contextId === 'string' && body.contextId ? body.contextId : undefined;
  // An answer to a task waiting for input names that task (and its conversation).
  const taskId = typeof body.taskId === 'string' && body.taskId ? body.taskId : undefined;
  if (taskId && !contextId) throw badRequest("field 'taskId' needs the task's 'contextId' too");
  const message = userMessage({ text, files: [], ...(contextId ? { contextId } : {}), ...(taskId ? { taskId } : {}) });
  const abort = new AbortController();
  // The viewer closed the page or stopped reading: stop following (the task runs on).
  res.on('close', () => abort.abort());
  const open = await ctx.agents.connection(agent);
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive' });
  const event = (name: string, data: unknown) => res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
  try {
    const live = liveSteps();
    let taskId = message.taskId || undefined;
    const outcome = await sendAndFollow(
      open.conn,
      message,
      (e) => {
        if (e.kind === 'task') taskId = e.taskId;
        const { send: out, keep } = live(e);
        if (out) event(out.name, out.data);
        if (keep && taskId) ctx.streamed.add(`${agent} ${taskId}`, keep);
      },
      abort.signal,
    );
    event('outcome', outcome);
  } catch (e) {
    event('error', errorBody(e));
  }
  res.end();
}

/** Routes one API call (the guard has passed); answers JSON, or a stream for /api/send. */
export async function handleApi(ctx: ApiContext, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  try {
    const route = `${req.method} ${url.pathname}`;
    switch (route) {
      case 'GET /api/agents':
        return json(res, 200, await agents(ctx));
      case 'GET /api/capsule': {
        const [status, body] = await capsule(ctx, url);
        return json(res, status, body);
      }
      case 'GET /api/tasks':
        return json(res, 200, { tasks: await ctx.agents.tasks(param(url, 'agent')) });
      case 'GET /api/task': {
        const agent = param(url, 'agent');
        const t = await ctx.agents.task(agent, param(url, 'id'));
        const seen = ctx.streamed.get(`${agent} ${t.id}`);
        const { entries, source } = timelineOf(t, seen?.entries);
        return json(res, 200, { task: outcomeOf(t), timeline: entries, source, ...(seen?.dropped ? { droppedSteps: seen.dropped } : {}) });
      }
      case 'POST /api/send':
        return await send(ctx, req, res);
      default:
        return json(res, 404, { error: `no API route ${route}`, code: 'E-CLI-053' });
    }
  } catch (e) {
    if (res.headersSent) {
      res.end();
      return;
    }
    const body = errorBody(e);
    json(res, body.code === 'E-CLI-053' || body.code === 'E-CLI-051' ? 400 : 502, body);
  }
}
