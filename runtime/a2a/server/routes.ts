/**
 * The HTTP routes of the A2A server (server.ts) on its express app: health and readiness, the agent
 * card (per requested version, with ETag), HTTP+JSON under /rest behind the auth door and the REST
 * door (front-door.ts), then the 404 and last-resort 500 answers. JSON-RPC at `POST /` never
 * reaches this app: server.ts's listener hands it to json-rpc.ts.
 */
import type { Express, NextFunction, Request, Response } from 'express';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import { restHandler, type UserBuilder } from '@a2a-js/sdk/server/express';
import { normaliseVersion } from '../core/wire.ts';
import type { TaskMachine } from '../tasks/tasks.ts';
import { etagMatches, type cardVariants } from './card.ts';
import { authDoor, holdAwake, internalErrorBody, requestedVersion, restDoor, restErrors } from './front-door.ts';
import type { Authenticator, Caller } from './auth.ts';
import type { TaskAcceptance } from '../tasks/task-options.ts';
import type { Activity } from '../../telemetry/activity.ts';
import type { ResponseOf } from './response-of.ts';

export interface RouteDeps {
  /** lifecycle.task_acceptance, as /readyz reports it. */
  acceptance: TaskAcceptance;
  machine: TaskMachine;
  handler: A2ARequestHandler;
  auth: Authenticator;
  /** The caller of each HTTP request, found by authDoor before the SDK builds its context. */
  callers: WeakMap<object, Caller>;
  userBuilder: UserBuilder;
  /** Request headers object → its response (front door), for a stream subscriber's backpressure. */
  resOf: ResponseOf;
  cards: ReturnType<typeof cardVariants>;
  maxBody: number;
  /** Serve HTTP+JSON under /rest. */
  rest: boolean;
  /** Told of each authenticated A2A request from its arrival until its response closes (streams: until they end). */
  activity?: Activity;
}

/** front-door.ts's `holdAwake` as express middleware. */
function inFlight(activity: Activity | undefined) {
  return (_req: Request, res: Response, next: NextFunction) => {
    holdAwake(activity, res);
    next();
  };
}

export function mountRoutes(app: Express, d: RouteDeps): void {
  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  app.get('/readyz', (_req, res) => {
    const ready = d.machine.canAccept();
    const waiting = d.machine.waitingForInput();
    res
      .status(ready ? 200 : 503)
      .json({ ready, acceptance: d.acceptance, draining: d.machine.isDraining(), waiting_for_input: waiting, blocked_on_input: waiting > 0 });
  });
  app.get(['/.well-known/agent-card.json'], (req, res) => {
    const wanted = normaliseVersion(requestedVersion(req.headers, req.originalUrl));
    const v = wanted === '1.0' ? d.cards.strict : d.cards.legacy;
    res.setHeader('Cache-Control', 'max-age=60');
    res.setHeader('Vary', 'A2A-Version');
    res.setHeader('ETag', v.etag);
    if (etagMatches(req.header('if-none-match'), v.etag)) {
      res.status(304).end();
      return;
    }
    res.setHeader('Content-Type', 'application/json');
    res.end(v.body);
  });
  if (d.rest) {
    // The SDK's REST router compiles a path-to-regexp matcher per route when it is built (≈ 25 ms
    // of CPU): built at the first HTTP+JSON request instead of in front of readiness.
    let rest: ReturnType<typeof restHandler> | undefined;
    app.use('/rest', authDoor(d.auth, d.callers), inFlight(d.activity), restDoor(d.maxBody, d.resOf), (req: Request, res: Response, next: NextFunction) => {
      rest ??= restHandler({ requestHandler: d.handler, userBuilder: d.userBuilder });
      rest(req, res, next);
    });
    app.use('/rest', restErrors());
  }
  app.use((_req: Request, res: Response) => {
    res.status(404).json({ error: 'not found: POST / for JSON-RPC, /rest/… for HTTP+JSON, GET /.well-known/agent-card.json for the card' });
  });
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) {
      res.end();
      return;
    }
    res.status(500).json(internalErrorBody(err));
  });
}
