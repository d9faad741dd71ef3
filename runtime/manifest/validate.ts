/**
 * Walks a YAML document (yaml's Document API + LineCounter) against a schema table and builds the
 * camelCase value with defaults applied. Every problem is collected with file, line, column and
 * dotted field path; nothing stops at the first error.
 */
import { LineCounter, isAlias, isMap, isScalar, isSeq, parseDocument, type Document, type Node, type Pair, type YAMLMap, type YAMLSeq } from 'yaml';
import type { ErrorLocation } from '../errors.ts';
import type { Problem } from './checks.ts';
import { duplicateKeys } from './duplicates.ts';
import { type ErrorCollector, nearest } from './errors.ts';
import { inRangeOf, integerLiteral, parseBytes, rangeHint, rangeText } from './numbers.ts';
import { referenceRefusal, type ReferenceKey } from './reference-keys.ts';
import { indexOf, leafKey, type Index } from './schema-index.ts';
import { snakeToCamel, type FieldSpec } from './schema.ts';

export interface Position {
  line: number;
  column: number;
}

export interface WalkResult {
  /** camelCase value with defaults applied. */
  value: Record<string, unknown>;
  /** Location of each present field's value, keyed by concrete dotted path (`artifacts[1].name`). */
  locs: Map<string, Position>;
  /** Location of each present field's key. */
  keyLocs: Map<string, Position>;
}

const TYPE_NAMES: Record<FieldSpec['type'], string> = {
  string: 'a string',
  version: 'a version string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  bytes: "a byte count (integer, or e.g. '512Mi')",
  enum: 'one of the listed values',
  object: 'a mapping',
  mapping: 'a mapping',
  'string-map': 'a mapping of strings',
  list: 'a list',
  schema: 'a JSON Schema (a mapping, or a string holding a JSON object)',
};

function describeNode(n: Node | null | undefined): string {
  if (n === null || n === undefined) return 'nothing';
  if (isMap(n)) return 'a mapping';
  if (isSeq(n)) return 'a list';
  if (isScalar(n)) {
    const v = n.value;
    if (v === null) return 'null';
    if (typeof v === 'string') return `the string '${v}'`;
    return `${typeof v} ${String(v)}`;
  }
  return 'an unsupported node';
}

export class SchemaWalker {
  readonly lc = new LineCounter();
  readonly locs = new Map<string, Position>();
  readonly keyLocs = new Map<string, Position>();
  private doc!: Document.Parsed;
  private readonly idx: Index;

  constructor(
    schema: readonly FieldSpec[],
    private readonly file: string,
    private readonly errors: ErrorCollector,
    private readonly text: string,
    /** Keys of the reference runtime refused with why and what to write instead (reference-keys.ts). */
    private readonly reference: readonly ReferenceKey[] = [],
  ) {
    this.idx = indexOf(schema);
  }

  pos(n: Node | null | undefined): Position {
    const off = n?.range?.[0] ?? 0;
    const p = this.lc.linePos(off);
    return { line: p.line, column: p.col };
  }

  loc(field: string | undefined, p: Position): ErrorLocation {
    return { file: this.file, line: p.line, column: p.column, ...(field ? { field } : {}) };
  }

  report(field: string, p: Position, problem: Problem): void {
    this.errors.add(problem.code, problem.message, problem.hint, this.loc(field, p));
  }

  /** Parses and walks. Returns undefined when the text is not YAML or not a mapping. */
  run(): WalkResult | undefined {
    this.doc = parseDocument(this.text, { lineCounter: this.lc, prettyErrors: false, uniqueKeys: true });
    this.syntaxErrors();
    if (this.doc.errors.length > 0) return undefined;
    const root = this.doc.contents;
    if (root === null || (isScalar(root) && (root.value === null || root.value === ''))) {
      this.errors.add('E-MAN-023', 'the manifest is empty', 'write a YAML mapping with at least `name:` and `version:`', {
        file: this.file,
        line: 1,
        column: 1,
      });
      return undefined;
    }
    if (!isMap(root)) {
      this.errors.add(
        'E-MAN-003',
        `the manifest must be a mapping, found ${describeNode(root)}`,
        'write `key: value` lines at the top level, starting with `name:` and `version:`',
        this.loc(undefined, this.pos(root)),
      );
      return undefined;
    }
    const value = this.walkObject(root, '', '', { line: 1, column: 1 });
    return { value, locs: this.locs, keyLocs: this.keyLocs };
  }

  /** The parser's errors, each at its line; a repeated key named with its field and first line. */
  private syntaxErrors(): void {
    const dups = this.doc.errors.some((e) => e.code === 'DUPLICATE_KEY') ? duplicateKeys(this.doc) : new Map();
    for (const e of this.doc.errors) {
      const p = this.lc.linePos(e.pos[0]);
      const dup = e.code === 'DUPLICATE_KEY' ? dups.get(e.pos[0]) : undefined;
      if (dup) {
        const where = dup.parent === '' ? 'the manifest' : `'${dup.parent}'`;
        this.errors.add(
          'E-MAN-001',
          `duplicate key '${dup.key}' in ${where} (first given at line ${this.lc.linePos(dup.firstOffset).line})`,
          'each key may appear once per mapping; remove or merge the duplicate',
          this.loc(dup.field, { line: p.line, column: p.col }),
        );
        continue;
      }
      const msg = e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
      const hint =
        e.code === 'DUPLICATE_KEY'
          ? 'each key may appear once per mapping; remove or merge the duplicate'
          : 'fix the YAML syntax at this position (check indentation, colons and quoting)';
      this.errors.add('E-MAN-001', `YAML syntax error: ${msg}`, hint, { file: this.file, line: p.line, column: p.col });
    }
  }

  private resolve(n: unknown): Node | null {
    if (n === null || n === undefined) return null;
    if (isAlias(n)) return (n.resolve(this.doc) as Node | undefined) ?? null;
    return n as Node;
  }

  private join(parent: string, key: string): string {
    return parent === '' ? key : `${parent}.${key}`;
  }

  private walkObject(map: YAMLMap, pattern: string, path: string, parentKeyPos: Position): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const specs = this.idx.children.get(pattern) ?? [];
    const known = new Map(specs.map((s) => [leafKey(s.path), s]));
    const seen = new Set<string>();
    for (const pair of map.items as Pair[]) {
      const keyNode = this.resolve(pair.key);
      const keyPos = this.pos(keyNode);
      if (!isScalar(keyNode) || typeof keyNode.value !== 'string') {
        this.report(path || '(root)', keyPos, {
          code: 'E-MAN-003',
          message: `keys must be plain strings, found ${describeNode(keyNode)}`,
          hint: 'use a plain word as the key',
        });
        continue;
      }
      const key = keyNode.value;
      const childPath = this.join(path, key);
      const spec = known.get(key);
      if (!spec) {
        this.unknownKey(key, childPath, pattern, [...known.keys()], keyPos);
        continue;
      }
      seen.add(key);
      this.keyLocs.set(childPath, keyPos);
      const valueNode = this.resolve(pair.value);
      this.locs.set(childPath, valueNode ? this.pos(valueNode) : keyPos);
      const v = this.walkValue(valueNode, spec, childPath, keyPos);
      if (v !== undefined) out[snakeToCamel(key)] = v;
    }
    for (const spec of specs) {
      const key = leafKey(spec.path);
      if (seen.has(key)) continue;
      const childPath = this.join(path, key);
      if (spec.required) {
        const where = path === '' ? 'the manifest' : `'${path}'`;
        this.report(childPath, parentKeyPos, {
          code: 'E-MAN-002',
          message: `missing required field '${key}' in ${where}`,
          hint: `add \`${key}:\` (${spec.validation}) ${path === '' ? 'at the top level' : `under \`${leafKey(path.replace(/\[\d+\]$/, ''))}:\``}`,
        });
        continue;
      }
      const d = this.absentValue(spec);
      if (d !== undefined) out[snakeToCamel(key)] = d;
    }
    return out;
  }

  /** The value of an absent field: its default, or a materialized object with defaults. */
  private absentValue(spec: FieldSpec): unknown {
    if (spec.default !== undefined) return structuredClone(spec.default);
    if (spec.type === 'object' && spec.materialize) {
      const out: Record<string, unknown> = {};
      for (const c of this.idx.children.get(spec.path) ?? []) {
        const d = this.absentValue(c);
        if (d !== undefined) out[snakeToCamel(leafKey(c.path))] = d;
      }
      return out;
    }
    return undefined;
  }

  private unknownKey(key: string, childPath: string, pattern: string, siblings: string[], keyPos: Position): void {
    const refusal = referenceRefusal(this.reference, pattern === '' ? key : `${pattern}.${key}`);
    if (refusal) {
      this.report(childPath, keyPos, refusal);
      return;
    }
    const near = nearest(key, siblings);
    let message: string;
    let hint: string;
    if (near) {
      message = `unknown key '${key}'; did you mean '${near}'?`;
      hint = `rename '${key}' to '${near}'`;
    } else {
      const elsewhere = (this.idx.leafPaths.get(key) ?? []).filter((p) => !p.includes('[]') || pattern.includes('[]'));
      const where = elsewhere[0];
      if (where) {
        message = `unknown key '${key}' here; did you mean '${where}'?`;
        hint = `move '${key}' to '${where}'`;
      } else {
        message = `unknown key '${key}'`;
        hint = siblings.length ? `remove it; valid keys here are: ${siblings.join(', ')}` : 'remove it';
      }
    }
    this.report(childPath, keyPos, { code: 'E-MAN-005', message, hint });
  }

  private typeError(spec: FieldSpec, path: string, n: Node | null, keyPos: Position): undefined {
    const quoteHint =
      isScalar(n) && typeof n.value !== 'string' && (spec.type === 'string' || spec.type === 'enum') ? ` (quote it: "${n.source ?? String(n.value)}")` : '';
    this.report(path, n ? this.pos(n) : keyPos, {
      code: 'E-MAN-003',
      message: `'${leafKey(path)}' must be ${TYPE_NAMES[spec.type]}, found ${describeNode(n)}`,
      hint:
        spec.type === 'integer' || spec.type === 'bytes'
          ? rangeHint(spec)
          : `give ${TYPE_NAMES[spec.type]}${quoteHint}${spec.type === 'enum' && spec.values ? `: ${spec.values.join(', ')}` : ''}`,
    });
    return undefined;
  }

  private walkValue(n: Node | null, spec: FieldSpec, path: string, keyPos: Position): unknown {
    const p = n ? this.pos(n) : keyPos;
    const isNull = n === null || (isScalar(n) && n.value === null);
    if (isNull) {
      if (spec.type === 'list' && spec.nonEmpty) {
        this.report(path, p, {
          code: 'E-MAN-010',
          message: `'${path}' is present but empty`,
          hint: `list at least one entry, or remove \`${leafKey(path)}:\` (and its block) entirely`,
        });
        return undefined;
      }
      if (spec.type === 'object' || spec.type === 'mapping') {
        // `block:` with nothing under it: treat as an empty mapping.
        if (spec.type === 'mapping') return {};
        return this.walkEmptyObject(spec, path, keyPos);
      }
      this.report(path, p, {
        code: 'E-MAN-003',
        message: `'${leafKey(path)}' has no value`,
        hint: `give ${TYPE_NAMES[spec.type]} (${spec.validation}), or remove the key`,
      });
      return undefined;
    }
    let value: unknown;
    switch (spec.type) {
      case 'string':
      case 'enum': {
        if (spec.verbatimNumbers && isScalar(n) && typeof n.value === 'number') value = n.source ?? String(n.value);
        else if (!isScalar(n) || typeof n.value !== 'string') return this.typeError(spec, path, n, keyPos);
        else value = n.value;
        if (spec.type === 'enum' && !spec.values!.includes(value as string)) {
          const near = nearest(value as string, spec.values!);
          this.report(path, p, {
            code: 'E-MAN-004',
            message: `'${leafKey(path)}' must be one of ${spec.values!.map((v) => `'${v}'`).join(', ')}, found '${value as string}'${near ? `; did you mean '${near}'?` : ''}`,
            hint: near ? `use '${near}'` : `use one of: ${spec.values!.join(', ')}`,
          });
          return undefined;
        }
        if (spec.required && (value as string).trim() === '') {
          this.report(path, p, { code: 'E-MAN-002', message: `required field '${leafKey(path)}' is empty`, hint: `give a value (${spec.validation})` });
          return undefined;
        }
        break;
      }
      case 'version': {
        if (!isScalar(n) || (typeof n.value !== 'string' && typeof n.value !== 'number')) return this.typeError(spec, path, n, keyPos);
        value = typeof n.value === 'number' ? (n.source ?? String(n.value)) : n.value;
        if ((value as string).trim() === '') {
          this.report(path, p, { code: 'E-MAN-002', message: `required field '${leafKey(path)}' is empty`, hint: `give a version, e.g. '1.0.0'` });
          return undefined;
        }
        break;
      }
      case 'integer': {
        if (!isScalar(n) || typeof n.value !== 'number') return this.typeError(spec, path, n, keyPos);
        // Exactly as written: 2.0, 1e3 and 2^64 are not the integers they read as.
        const exact = integerLiteral(n);
        if (exact === undefined) return this.notDigits(spec, path, n);
        if (!this.inRange(spec, path, p, exact, n.source)) return undefined;
        value = Number(exact);
        break;
      }
      case 'number': {
        if (!isScalar(n) || typeof n.value !== 'number' || !Number.isFinite(n.value)) return this.typeError(spec, path, n, keyPos);
        value = n.value;
        if (!this.inRange(spec, path, p, n.value)) return undefined;
        break;
      }
      case 'boolean':
        if (!isScalar(n) || typeof n.value !== 'boolean') return this.typeError(spec, path, n, keyPos);
        value = n.value;
        break;
      case 'bytes': {
        if (!isScalar(n) || (typeof n.value !== 'number' && typeof n.value !== 'string')) return this.typeError(spec, path, n, keyPos);
        const b = typeof n.value === 'number' ? integerLiteral(n) : parseBytes(n.value);
        if (b === undefined) return typeof n.value === 'number' ? this.notDigits(spec, path, n) : this.typeError(spec, path, n, keyPos);
        if (!this.inRange(spec, path, p, b, typeof n.value === 'string' ? n.value : n.source)) return undefined;
        value = Number(b);
        break;
      }
      case 'object':
        if (!isMap(n)) return this.typeError(spec, path, n, keyPos);
        return this.walkObject(n, spec.path, path, keyPos);
      case 'mapping':
        if (!isMap(n)) return this.typeError(spec, path, n, keyPos);
        return n.toJS(this.doc) as Record<string, unknown>;
      case 'string-map':
        return this.walkStringMap(n, spec, path, keyPos);
      case 'schema':
        return this.walkSchema(n, spec, path, keyPos, p);
      case 'list':
        return this.walkList(n, spec, path, keyPos, p);
    }
    if (spec.check) {
      const prob = spec.check(value);
      if (prob) {
        this.report(path, p, prob);
        return undefined;
      }
    }
    return value;
  }

  /** `Name: value` entries, every value a string. */
  private walkStringMap(n: Node, spec: FieldSpec, path: string, keyPos: Position): unknown {
    if (!isMap(n)) return this.typeError(spec, path, n, keyPos);
    const out: Record<string, string> = {};
    for (const pair of n.items as Pair[]) {
      const k = this.resolve(pair.key);
      const v = this.resolve(pair.value);
      if (!isScalar(k) || !isScalar(v) || v.value === null || typeof v.value === 'object') {
        this.report(`${path}.${isScalar(k) ? String(k.value) : '?'}`, this.pos(v ?? k), {
          code: 'E-MAN-003',
          message: `'${leafKey(path)}' values must be strings`,
          hint: 'write each entry as `Name: value`',
        });
        continue;
      }
      out[String(k.value)] = String(v.value);
    }
    return out;
  }

  /** A JSON Schema object: a YAML mapping, or a string holding JSON. */
  private walkSchema(n: Node, spec: FieldSpec, path: string, keyPos: Position, p: Position): unknown {
    if (isMap(n)) return n.toJS(this.doc) as Record<string, unknown>;
    if (isScalar(n) && typeof n.value === 'string') {
      try {
        const parsed: unknown = JSON.parse(n.value);
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed;
        this.report(path, p, {
          code: 'E-MAN-019',
          message: `'${leafKey(path)}' must hold a JSON object`,
          hint: 'give a JSON Schema object, e.g. {"type": "object", "properties": {}}',
        });
      } catch (e) {
        this.report(path, p, {
          code: 'E-MAN-019',
          message: `'${leafKey(path)}' is not valid JSON: ${(e as Error).message}`,
          hint: 'write the schema as a YAML mapping, or fix the JSON string',
        });
      }
      return undefined;
    }
    return this.typeError(spec, path, n, keyPos);
  }

  /** A list, each item walked against the `<path>[]` spec and located. */
  private walkList(n: Node, spec: FieldSpec, path: string, keyPos: Position, p: Position): unknown {
    if (!isSeq(n)) return this.typeError(spec, path, n, keyPos);
    const seq = n as YAMLSeq;
    if (spec.nonEmpty && seq.items.length === 0) {
      this.report(path, p, {
        code: 'E-MAN-010',
        message: `'${path}' is present but empty`,
        hint: `list at least one entry, or remove \`${leafKey(path)}:\` (and its block) entirely`,
      });
      return undefined;
    }
    const itemSpec = this.idx.byPattern.get(`${spec.path}[]`)!;
    const out: unknown[] = [];
    seq.items.forEach((item, i) => {
      const ip = `${path}[${i}]`;
      const node = this.resolve(item);
      this.locs.set(ip, node ? this.pos(node) : p);
      const v = this.walkValue(node, itemSpec, ip, node ? this.pos(node) : p);
      if (v !== undefined) out.push(v);
      else out.push(undefined);
    });
    return out;
  }

  private walkEmptyObject(spec: FieldSpec, path: string, keyPos: Position): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const c of this.idx.children.get(spec.path) ?? []) {
      const key = leafKey(c.path);
      if (c.required) {
        this.report(`${path}.${key}`, keyPos, {
          code: 'E-MAN-002',
          message: `missing required field '${key}' in '${path}'`,
          hint: `add \`${key}:\` (${c.validation}) under \`${leafKey(path)}:\``,
        });
        continue;
      }
      const d = this.absentValue(c);
      if (d !== undefined) out[snakeToCamel(key)] = d;
    }
    return out;
  }

  /** Within the row's range; integers and byte sizes compared exactly, `written` as in the file. */
  private inRange(spec: FieldSpec, path: string, p: Position, v: number | bigint, written?: string): boolean {
    if (inRangeOf(spec, v)) return true;
    this.report(path, p, {
      code: 'E-MAN-006',
      message: `'${leafKey(path)}' is ${written ?? String(v)}, out of range (${rangeText(spec)})`,
      hint: rangeHint(spec),
    });
    return false;
  }

  /** A number where an integer is expected that is not written as one (a fraction, an exponent). */
  private notDigits(spec: FieldSpec, path: string, n: Node): undefined {
    const src = isScalar(n) ? (n.source ?? String(n.value)) : '?';
    const bytes = spec.type === 'bytes' ? ' (or a string like `512Mi`)' : '';
    this.report(path, this.pos(n), {
      code: 'E-MAN-003',
      message: `'${leafKey(path)}' must be an integer written in digits${bytes}, found ${src}`,
      hint: rangeHint(spec),
    });
    return undefined;
  }
}

/** Walks `text` against `schema`; problems go to `errors`. */
export function walkYaml(
  text: string,
  file: string,
  schema: readonly FieldSpec[],
  errors: ErrorCollector,
  reference: readonly ReferenceKey[] = [],
): WalkResult | undefined {
  return new SchemaWalker(schema, file, errors, text, reference).run();
}
