/**
 * `mur console`'s server: node:http on 127.0.0.1 only (the viewer's own machine), serving the
 * page (plain HTML and JS modules from ./page/, no build step) and the API of api.ts behind the
 * guard of guard.ts. The URL it prints carries the per-run token the page sends on every call.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { Agents, type AgentsOptions } from './agents.ts';
import { handleApi, type ApiContext } from './api.ts';
import { checkOrigin, checkToken, newToken } from './guard.ts';
import { StreamedSteps } from './streamed.ts';

// Read by path, not imported: plain files the browser loads. `npm run build` copies the folder.
const PAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), 'page');
const PAGE_FILES: Record<string, string> = {
  '/': 'index.html',
  '/app.js': 'app.js',
  '/views.js': 'views.js',
  '/style.css': 'style.css',
};
const TYPES: Record<string, string> = { html: 'text/html', js: 'text/javascript', css: 'text/css' };

export interface ConsoleOptions extends AgentsOptions {
  /** 0 picks a free port. */
  port: number;
  kc: KubeConfig | { error: string };
  /** A fixed token (tests); a random one otherwise. */
  token?: string;
}

export interface RunningConsole {
  /** The page's URL, with the token. */
  url: string;
  port: number;
  token: string;
  close(): Promise<void>;
}

function refuse(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify({ error: message, code: 'E-CLI-052' }));
}

async function page(res: ServerResponse, file: string): Promise<void> {
  const body = await readFile(join(PAGE_DIR, file));
  res.writeHead(200, {
    'content-type': `${TYPES[file.split('.').pop()!] ?? 'application/octet-stream'}; charset=utf-8`,
    'cache-control': 'no-store',
    // The page runs its own modules and nothing else; it is never framed by another page.
    'content-security-policy': "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  });
  res.end(body);
}

export async function startConsole(o: ConsoleOptions): Promise<RunningConsole> {
  const token = o.token ?? newToken();
  const agents = new Agents(o);
  const ctx: ApiContext = { kc: o.kc, agents, urls: o.urls, streamed: new StreamedSteps() };
  let port = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const bad = checkOrigin(req, port);
    if (bad) return refuse(res, bad.status, bad.message);
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
    if (url.pathname.startsWith('/api/')) {
      const noToken = checkToken(req, token);
      if (noToken) return refuse(res, noToken.status, noToken.message);
      void handleApi(ctx, req, res, url);
      return;
    }
    const file = req.method === 'GET' ? PAGE_FILES[url.pathname] : undefined;
    if (!file) return refuse(res, 404, `no page ${req.method} ${url.pathname}`);
    page(res, file).catch((e) => refuse(res, 500, `the page file ${file} cannot be read: ${(e as Error).message}`));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, '127.0.0.1', () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/#token=${token}`,
    port,
    token,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await agents.close();
    },
  };
}
