/**
 * The text an executor is given for a task's message (`TaskContext.text`): the message's text
 * parts, then each file part. The model reads text, so a text file (a `text/*`, JSON, YAML or XML
 * media type whose bytes are UTF-8) is decoded into the input under a line naming the file; any
 * other file (an image, a PDF, a URL the runtime does not fetch) becomes a note naming the file,
 * its type and size, so the model knows something was attached that it cannot read. The history
 * keeps the parts as sent; only this text is derived (docs/a2a.md, "File parts").
 */
import type { Message, Part } from '@a2a-js/sdk';
import { messageText } from '../core/wire.ts';

/** Characters of one text file the model is given; the rest is cut with a note saying how much. */
export const MAX_FILE_TEXT = 64 * 1024;
/** Characters of all files of one message together; later files become notes past it. */
export const MAX_FILES_TEXT = 256 * 1024;

const TEXT_TYPES = /^(text\/[\w.+-]+|application\/(json|yaml|x-yaml|xml|[\w.-]+\+(json|xml)))$/i;

export function taskInputText(m: Message): string {
  const files = m.parts.filter((p) => p.content?.$case === 'raw' || p.content?.$case === 'url');
  const text = messageText(m);
  if (files.length === 0) return text;
  let budget = MAX_FILES_TEXT;
  const blocks = files.map((p, i) => {
    const block = fileBlock(p, i, budget);
    budget -= block.length;
    return block;
  });
  return [text, ...blocks].filter((s) => s !== '').join('\n\n');
}

function fileBlock(p: Part, index: number, budget: number): string {
  const name = p.filename || `file ${index + 1}`;
  const type = (p.mediaType || 'application/octet-stream').split(';')[0]!.trim();
  if (p.content?.$case === 'url') return `[attached file ${name} (${type}) at ${p.content.value}: not fetched]`;
  const bytes = p.content?.$case === 'raw' ? Buffer.from(p.content.value) : Buffer.alloc(0);
  const note = `[attached file ${name} (${type}, ${bytes.length} bytes)`;
  if (!TEXT_TYPES.test(type)) return `${note}: not shown, the model is given text files only]`;
  let body: string;
  try {
    body = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return `${note}: not shown, its bytes are not UTF-8 text]`;
  }
  const limit = Math.min(MAX_FILE_TEXT, Math.max(0, budget - note.length - 64));
  if (limit === 0) return `${note}: not shown, the message's files are over ${MAX_FILES_TEXT} characters]`;
  const cut = body.length > limit ? `\n[… ${body.length - limit} more characters of ${name} not shown]` : '';
  return `${note}]\n${body.slice(0, limit)}${cut}`;
}
