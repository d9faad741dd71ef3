/**
 * The console's way to a capsule: through runtime/client exactly as `mur send` goes (the
 * Capsule read with the viewer's kubeconfig, a TokenRequest for its URL, a port-forward to a pod
 * of its Service), or an A2A URL named on the command line. A connection is kept for reuse (a
 * port-forward per capsule, not per click) and reopened when its token is near its end or a call
 * on it failed.
 */
import type { Task } from '@a2a-js/sdk';
import { MurError } from '../errors.ts';
import { clientFailure } from '../client/connect.ts';
import { openTarget, type OpenTarget } from '../client/open-target.ts';
import { listTasks, type TaskOutcome } from '../client/task-calls.ts';
import { parseTarget } from '../client/target.ts';

/** Reopened after this long: the token open-target requests lives an hour. */
const REOPEN_AFTER_MS = 30 * 60_000;

export interface AgentsOptions {
  kubeconfig?: string;
  context?: string;
  serviceAccount?: string;
  apiKeyFile?: string;
  /** A2A URLs named on the command line: the only URLs the console talks to. */
  urls: string[];
}

/** `capsule:<namespace>/<name>` or `url:<A2A URL>`: how the page names an agent. */
export type AgentRef = string;

export class Agents {
  private readonly open = new Map<AgentRef, { at: number; target: Promise<OpenTarget> }>();

  constructor(private readonly o: AgentsOptions) {}

  /** Checks a reference the page sent: a Capsule by namespace/name, or one of the URLs given. */
  parse(ref: string): { ref: AgentRef; target: string; namespace?: string } {
    if (ref.startsWith('url:')) {
      const url = ref.slice(4);
      if (!this.o.urls.includes(url))
        throw new MurError('E-CLI-051', `agent '${url}' was not named on the mur console command line`, {
          hint: 'mur console <A2A URL>… names the URLs the console may call',
        });
      return { ref, target: url };
    }
    const m = /^capsule:([^/]+)\/(.+)$/.exec(ref);
    if (!m) throw new MurError('E-CLI-051', `agent reference '${ref}' is neither capsule:<namespace>/<name> nor url:<A2A URL>`);
    parseTarget(`capsule/${m[2]}`, m[1]); // the name's grammar, checked as mur send checks it
    return { ref, target: `capsule/${m[2]}`, namespace: m[1]! };
  }

  async connection(ref: string): Promise<OpenTarget> {
    const p = this.parse(ref);
    const held = this.open.get(p.ref);
    if (held && Date.now() - held.at < REOPEN_AFTER_MS) {
      try {
        return await held.target;
      } catch {
        // it failed to open: try again below
      }
    }
    if (held) await this.drop(p.ref);
    const target = openTarget({
      target: p.target,
      ...(p.namespace ? { namespace: p.namespace } : {}),
      ...(this.o.kubeconfig ? { kubeconfig: this.o.kubeconfig } : {}),
      ...(this.o.context ? { context: this.o.context } : {}),
      ...(this.o.serviceAccount ? { serviceAccount: this.o.serviceAccount } : {}),
      ...(this.o.apiKeyFile ? { apiKeyFile: this.o.apiKeyFile } : {}),
    });
    this.open.set(p.ref, { at: Date.now(), target });
    try {
      return await target;
    } catch (e) {
      this.open.delete(p.ref);
      throw e;
    }
  }

  /** Runs `call` on the agent's connection; a failed call closes it so the next one reopens. */
  async with<T>(ref: string, call: (t: OpenTarget) => Promise<T>): Promise<T> {
    const t = await this.connection(ref);
    try {
      return await call(t);
    } catch (e) {
      await this.drop(this.parse(ref).ref);
      throw e;
    }
  }

  async tasks(ref: string, contextId?: string): Promise<TaskOutcome[]> {
    return this.with(ref, async (t) => (await listTasks(t.conn, contextId ? { contextId } : {})).tasks);
  }

  /** The whole task (history and artifacts), for the timeline. */
  async task(ref: string, id: string): Promise<Task> {
    return this.with(ref, async (t) => {
      try {
        return await t.conn.client.getTask({ tenant: '', id, historyLength: 100 }, t.conn.options());
      } catch (e) {
        throw clientFailure(e, t.conn.name, `reading task ${id}`, t.conn.detail?.());
      }
    });
  }

  private async drop(ref: AgentRef): Promise<void> {
    const held = this.open.get(ref);
    this.open.delete(ref);
    await held?.target.then(
      (t) => t.close(),
      () => {},
    );
  }

  async close(): Promise<void> {
    await Promise.all([...this.open.keys()].map((r) => this.drop(r)));
  }
}
