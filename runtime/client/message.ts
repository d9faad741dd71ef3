/** The user's message as A2A parts: the text, and each `--file` as a file part with its bytes. */
import { readFileSync, statSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Role, type Message, type Part } from '@a2a-js/sdk';
import { MurError } from '../errors.ts';
import { textPart } from '../a2a/core/wire.ts';

// A file travels inline in the request; capsules refuse bodies over 1 MiB by default (docs/a2a.md),
// and base64 grows bytes by a third, so a bigger file could never be accepted.
export const MAX_FILE_BYTES = 700 * 1024;

// Media types by extension for the files people attach to a task; anything else is octet-stream
// (the capsule's card says which types it accepts; a refused type is its answer, -32005).
const MEDIA_TYPES: Record<string, string> = {
  '.txt': 'text/plain',
  '.md': 'text/markdown',
  '.csv': 'text/csv',
  '.json': 'application/json',
  '.yaml': 'application/yaml',
  '.yml': 'application/yaml',
  '.html': 'text/html',
  '.xml': 'application/xml',
  '.pdf': 'application/pdf',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
};

export function filePart(path: string): Part {
  let size: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new MurError('E-CLI-040', `--file ${path}: not a regular file`, { location: { file: path } });
    size = st.size;
  } catch (e) {
    if (e instanceof MurError) throw e;
    throw new MurError('E-CLI-040', `--file ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, {
      location: { file: path },
    });
  }
  if (size > MAX_FILE_BYTES) {
    throw new MurError('E-CLI-040', `--file ${path}: ${size} bytes, over the ${MAX_FILE_BYTES} bytes a message can carry inline`, {
      location: { file: path },
      hint: 'send a smaller file, or a URL to it in the text',
    });
  }
  const mediaType = MEDIA_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';
  return { content: { $case: 'raw', value: readFileSync(path) }, metadata: undefined, filename: basename(path), mediaType };
}

export function userMessage(o: { text: string; files?: readonly string[]; contextId?: string; taskId?: string }): Message {
  return {
    messageId: randomUUID(),
    contextId: o.contextId ?? '',
    taskId: o.taskId ?? '',
    role: Role.ROLE_USER,
    parts: [textPart(o.text), ...(o.files ?? []).map(filePart)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}
