/**
 * What `mur` does with the secrets it was started with, first thing (runtime/cli/main.ts): the
 * provider key (already taken out of process.env), every credential-shaped variable's value
 * (runtime/shell/env.ts's list) and a password in a URL on the command line (`--store
 * postgresql://user:password@…`). All are scrubbed from /proc/<pid>/environ and cmdline, the
 * process is made non-dumpable and no process it starts can hold CAP_SYS_PTRACE
 * (runtime/process-guard.ts); the key and the passwords are also held
 * for redaction (runtime/secrets.ts). The other variables' values are not held: `AWS_REGION=us-east-1`
 * would then vanish from every answer, and the runtime never reads them.
 */
import { guardProcessSecrets, guardWarnings } from '../process-guard.ts';
import { holdSecret } from '../secrets.ts';
import { isStrippedEnvName } from '../shell/env.ts';

/** Protects the start-up secrets; returns the warnings to print (what stays readable, and why). */
export function protectStartupSecrets(key: string | undefined, argv: readonly string[] = process.argv, env: NodeJS.ProcessEnv = process.env): string[] {
  const held = [...(key ? [key] : []), ...argv.flatMap(urlPasswords)];
  for (const s of held) holdSecret(s);
  const names = Object.keys(env).filter((n) => isStrippedEnvName(n));
  return guardWarnings(guardProcessSecrets(held, names, env), held.length > 0);
}

/** The password of a `scheme://user:password@host` argument (`--flag=` prefix allowed), verbatim and decoded. */
function urlPasswords(arg: string): string[] {
  const m = /^[a-z][a-z0-9+.-]*:\/\/[^/@:]*:([^/@]+)@/i.exec(arg.replace(/^--[a-z-]+=/, ''));
  if (!m) return [];
  try {
    return [m[1]!, decodeURIComponent(m[1]!)];
  } catch {
    return [m[1]!]; // a stray %: the URL parser refuses it later, the verbatim form is scrubbed
  }
}
