/**
 * The scripted provider (test/provider/) in a process of its own, for benches: its answers then
 * never queue behind the bench's client (sending, polling, sampling /proc) on one event loop, as
 * they did when the bench hosted it, and the runtime under test is the only thing it waits for.
 *
 * As an entry: `node --import tsx bench/provider-process.ts <script.json>` starts the provider on a
 * free loopback port, prints `provider <url>` and serves until SIGTERM. `spawnProvider` runs it.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PROJECT_ROOT } from '../runtime/wit/packages.ts';
import { tmp } from '../test/loop/kit.ts';
import { loadScript, startScriptedProvider, type Script } from '../test/provider/scripted-provider.ts';

export interface ProviderProcess {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts the provider for `script` in its own node process; resolves once it listens. */
export async function spawnProvider(script: Script): Promise<ProviderProcess> {
  const file = join(tmp('bench-provider-'), 'script.json');
  writeFileSync(file, JSON.stringify(script));
  const proc = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), file], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const on = (d: Buffer): void => {
      out += d.toString();
      const m = /^provider (http:\/\/\S+)$/m.exec(out);
      if (m) resolve(m[1]!);
    };
    proc.stdout!.on('data', on);
    proc.stderr!.on('data', on);
    void exited.then(() => reject(new Error(`bench/provider-process.ts ${file} exited ${proc.exitCode}:\n${out}`)));
  });
  return {
    url,
    pid: proc.pid!,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        await exited;
      }
    },
  };
}

async function main(file: string): Promise<void> {
  // A bench sends hundreds of tasks: keep only the last requests, not all of them.
  const p = await startScriptedProvider(loadScript(file), { keep: 16 });
  process.stdout.write(`provider ${p.url}\n`);
  process.once('SIGTERM', () => void p.stop().then(() => process.exit(0)));
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (!process.argv[2]) {
    process.stderr.write('usage: node --import tsx bench/provider-process.ts <script.json>\n');
    process.exit(2);
  }
  main(process.argv[2]).catch((e: unknown) => {
    process.stderr.write(`bench/provider-process.ts: ${(e as Error).message}\n`);
    process.exit(1);
  });
}
