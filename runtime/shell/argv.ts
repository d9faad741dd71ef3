/**
 * The argument-list side of a shell call: the `-c` script of a shell interpreter, the display
 * `command`, and turning a model's `{"command": "..."}` input into an argument list.
 */
import path from 'node:path';

/** Shell interpreters: called with `-c <script>`; their script is recorded on `shell-event.script`. */
export const SHELL_INTERPRETERS: readonly string[] = ['sh', 'bash', 'zsh', 'fish', 'dash', 'ksh', 'mksh', 'ash', 'busybox-sh'];

export const COMMAND_DISPLAY_MAX = 200;

export function isShellInterpreter(binary: string): boolean {
  return SHELL_INTERPRETERS.includes(path.basename(binary));
}

/**
 * The `-c` script body when `binary` is a shell interpreter invoked with `-c` (alone, or in a
 * cluster such as `-ec`), else `undefined`. Options before it are skipped (`-o`/`+o`/`-O`/`+O` take
 * a value); the script is the first operand after them.
 */
export function shellScript(binary: string, args: readonly string[]): string | undefined {
  if (!isShellInterpreter(binary)) return undefined;
  let cflag = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') return cflag ? args[i + 1] : undefined;
    if (a === '--rcfile' || a === '--init-file') {
      i++;
      continue;
    }
    if (a.startsWith('--')) continue; // long options (--norc, --login, ...)
    if ((a.startsWith('-') || a.startsWith('+')) && a.length > 1) {
      const flags = a.slice(1);
      if (a.startsWith('-') && flags.includes('c')) cflag = true;
      if (/[oO]$/.test(flags)) i++; // -o pipefail
      continue;
    }
    return cflag ? a : undefined;
  }
  return undefined;
}

function quoteForDisplay(a: string): string {
  return a !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

/**
 * `shell-event.command`: the argument list alone (for a shell interpreter, the `-c` script),
 * truncated to 200 characters. A display string — policies decide on argv/script, never on this.
 */
export function commandDisplay(args: readonly string[], script?: string): string {
  const full = script ?? args.map(quoteForDisplay).join(' ');
  const chars = Array.from(full);
  return chars.length <= COMMAND_DISPLAY_MAX ? full : chars.slice(0, COMMAND_DISPLAY_MAX).join('');
}

/**
 * A model's `{"command": "..."}` as an argument list (research/murmur.md §5.6): a shell
 * interpreter gets `["-c", command]`; any other binary a quote-aware word split (single quotes
 * literal, double quotes with `\"` `\\` `\$` `` \` `` escapes, backslash escapes outside quotes).
 * No expansion of any kind happens. An unterminated quote is an error (returns `undefined`).
 */
export function argsFromCommand(binary: string, command: string): string[] | undefined {
  if (isShellInterpreter(binary)) return ['-c', command];
  return splitWords(command);
}

export function splitWords(s: string): string[] | undefined {
  const out: string[] = [];
  let cur = '';
  let inWord = false;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (ch === "'") {
      const end = s.indexOf("'", i + 1);
      if (end < 0) return undefined;
      cur += s.slice(i + 1, end);
      i = end;
      inWord = true;
    } else if (ch === '"') {
      inWord = true;
      let j = i + 1;
      for (; j < s.length && s[j] !== '"'; j++) {
        if (s[j] === '\\' && j + 1 < s.length && '"\\$`'.includes(s[j + 1]!)) j++;
        cur += s[j];
      }
      if (j >= s.length) return undefined;
      i = j;
    } else if (ch === '\\') {
      if (i + 1 < s.length) {
        if (s[i + 1] !== '\n') cur += s[i + 1];
        i++;
      }
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) out.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += ch;
      inWord = true;
    }
  }
  if (inWord) out.push(cur);
  return out;
}
