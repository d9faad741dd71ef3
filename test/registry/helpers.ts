import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { publish, type PublishResult } from '../../runtime/registry/registry.ts';

export function tmp(prefix = 'mur-reg-'): string {
  return mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Bytes that start like a WebAssembly component (nothing here compiles them). */
export function fakeComponent(tag: string): Buffer {
  return Buffer.concat([Buffer.from([0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00]), Buffer.from(`component:${tag}`)]);
}

export interface ArtifactSpec {
  name: string;
  version: string;
  runtime?: 'tool' | 'driver' | 'hook' | 'skill';
  /** Extra YAML lines for the artifact manifest. */
  extra?: string;
  wasm?: Buffer;
  /** File name of the component in the artifact dir. */
  wasmName?: string;
}

export function artifactYaml(s: ArtifactSpec): string {
  return `name: ${s.name}\nversion: ${s.version}\nruntime: ${s.runtime ?? 'tool'}\ndescription: The ${s.name} artifact.\n${s.extra ?? ''}`;
}

export function makeArtifactDir(root: string, s: ArtifactSpec): string {
  const dir = path.join(root, `${s.name}-${s.version}-src`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'murmur.yaml'), artifactYaml(s));
  if (s.runtime === 'skill') writeFileSync(path.join(dir, 'skill.md'), `# ${s.name}\n`);
  else writeFileSync(path.join(dir, s.wasmName ?? 'component.wasm'), s.wasm ?? fakeComponent(`${s.name}@${s.version}`));
  return dir;
}

export function publishSpec(registry: string, s: ArtifactSpec): PublishResult {
  return publish(registry, makeArtifactDir(tmp('mur-src-'), s));
}

export function makeCapsule(yaml: string, files: Record<string, string> = {}): string {
  const dir = tmp('mur-caps-');
  writeFileSync(path.join(dir, 'murmur.yaml'), yaml);
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    writeFileSync(path.join(dir, f), text);
  }
  return dir;
}

/** Every path under `dir` (relative, sorted; dirs end with /). */
export function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    let entries: string[] = [];
    try {
      entries = readdirSync(d).sort();
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(d, e);
      const r = rel ? `${rel}/${e}` : e;
      if (statSync(p).isDirectory()) {
        out.push(`${r}/`);
        walk(p, r);
      } else out.push(r);
    }
  };
  walk(dir, '');
  return out;
}

export function read(p: string): string {
  return readFileSync(p, 'utf8');
}
