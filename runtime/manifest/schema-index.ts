/**
 * A schema table (schema.ts) indexed for the walker: each row by its path pattern, the rows under
 * each mapping, and where each key name occurs (for "did you mean 'lifecycle.max_task_reopens'?").
 */
import type { FieldSpec } from './schema.ts';

export interface Index {
  byPattern: Map<string, FieldSpec>;
  children: Map<string, FieldSpec[]>;
  leafPaths: Map<string, string[]>;
}

const indexCache = new WeakMap<readonly FieldSpec[], Index>();

function parentPattern(p: string): string {
  if (p.endsWith('[]')) return p; // handled by caller
  const i = p.lastIndexOf('.');
  return i < 0 ? '' : p.slice(0, i);
}

export function leafKey(p: string): string {
  const i = p.lastIndexOf('.');
  return i < 0 ? p : p.slice(i + 1);
}

export function indexOf(schema: readonly FieldSpec[]): Index {
  let idx = indexCache.get(schema);
  if (idx) return idx;
  idx = { byPattern: new Map(), children: new Map(), leafPaths: new Map() };
  for (const f of schema) {
    idx.byPattern.set(f.path, f);
    if (f.path.endsWith('[]')) continue;
    const parent = parentPattern(f.path);
    const list = idx.children.get(parent) ?? [];
    list.push(f);
    idx.children.set(parent, list);
    const leaf = leafKey(f.path);
    const lp = idx.leafPaths.get(leaf) ?? [];
    lp.push(f.path);
    idx.leafPaths.set(leaf, lp);
  }
  indexCache.set(schema, idx);
  return idx;
}
