/**
 * A child process that transpiles components (transpile-jco.ts) one after another, for as long as
 * its parent sends them: started by transpile-child-run.ts with V8 flags of its own. On stdin, each
 * job is a header line `{"dir": <cache entry folder>, "name": <component name>, "bytes": <n>}`
 * followed by the component's n bytes; on stdout, one JSON line per job in order — `{ "meta": …,
 * "pages": … }` (the binary's page releases so far: transpile-pages.ts), or `{ "error": …,
 * "hint": … }` (a component that fails does not end the process). The process ends when its stdin
 * closes.
 *
 * Why one process for several: a first run transpiles every component the capsule names, and each
 * fresh process paid Node's start and the transpiler's own WebAssembly compile again (≈ 0.3 s on
 * these machines, measured) before it did any work.
 */
import { transpileInto } from './transpile-jco.ts';
import { JobReader, refusalOf } from './transpile-jobs.ts';
import { transpilePageSteps } from './transpile-pages.ts';

const reader = new JobReader();
for await (const chunk of process.stdin) {
  reader.push(chunk as Buffer);
  for (let job = reader.next(); job; job = reader.next()) {
    try {
      const meta = await transpileInto(job.name, job.bytes, job.dir);
      process.stdout.write(`${JSON.stringify({ meta, pages: transpilePageSteps() })}\n`);
    } catch (e) {
      process.stdout.write(`${JSON.stringify(refusalOf(e))}\n`);
    }
  }
}
if (reader.pending()) {
  process.stderr.write(`transpile-child: stdin ended inside a job (${reader.pending()} bytes unread)\n`);
  process.exitCode = 1;
}
