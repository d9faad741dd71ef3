/**
 * Duplicate keys. The yaml library reports one only as "Map keys must be unique" at an offset, so a
 * manifest with a repeated key was refused without saying which key or where it was first given.
 * Its errors are matched here, by the offset of the repeated key, to the key, its dotted field path
 * and the first occurrence, found by walking the parsed document (which keeps both pairs).
 */
import { isMap, isScalar, isSeq, type Document, type Node } from 'yaml';

export interface DuplicateKey {
  key: string;
  /** Dotted path of the repeated key (`lifecycle.queue_depth`, `artifacts[0].name`). */
  field: string;
  /** Dotted path of the mapping holding it; '' at the top level. */
  parent: string;
  /** Source offsets of the repeated key and of its first occurrence. */
  offset: number;
  firstOffset: number;
}

/** Every repeated scalar key of the document, by the source offset of the repetition. */
export function duplicateKeys(doc: Document.Parsed): Map<number, DuplicateKey> {
  const out = new Map<number, DuplicateKey>();
  const join = (parent: string, key: string) => (parent === '' ? key : `${parent}.${key}`);
  const walk = (node: unknown, path: string): void => {
    if (isSeq(node)) {
      for (const [i, item] of node.items.entries()) walk(item, `${path}[${i}]`);
      return;
    }
    if (!isMap(node)) return;
    // Keyed by type and value, as the library compares them: `1` and `'1'` are different keys.
    const first = new Map<string, number>();
    for (const pair of node.items) {
      const k = pair.key as Node | null;
      if (!isScalar(k) || k.value === null || typeof k.value === 'object') continue;
      const key = String(k.value);
      const id = `${typeof k.value}:${key}`;
      const offset = k.range?.[0] ?? 0;
      const seen = first.get(id);
      if (seen === undefined) first.set(id, offset);
      else out.set(offset, { key, field: join(path, key), parent: path, offset, firstOffset: seen });
      walk(pair.value, join(path, key));
    }
  };
  walk(doc.contents, '');
  return out;
}
