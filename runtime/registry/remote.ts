/**
 * Remote artifacts (`source: {url, sha256}` on a capsule entry). The URL is fetched over HTTP(S),
 * its bytes must hash to `source.sha256` (nothing is kept otherwise), and the content is unpacked
 * into a cache directory keyed by that hash, in registry layout — from then on it is resolved and
 * verified exactly like a registry artifact.
 *
 * The URL serves either a bare WebAssembly component (`\0asm…`; its manifest is derived from the
 * capsule entry: name, version — default `remote` —, runtime, and a hook's binding /
 * execution_mode / commit_policy), or a tar archive (optionally gzip'd)
 * holding `murmur.yaml` and one `*.wasm` (skills: `skill.md`) at its root.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { MurError } from '../errors.ts';
import type { ArtifactEntry } from '../manifest/capsule.ts';
import { parseArtifactManifest } from '../manifest/artifact.ts';
import { CONTRACT_FIELDS, type ContractField, type HookContract } from '../contracts/commit-table.ts';
import { sha256Hex, type ArtifactFile } from '../contracts/digest.ts';
import { ARTIFACT_MANIFEST, SKILL_FILE, payloadName, readVerifiedDir, writeArtifactDir, type VerifiedArtifact } from './registry.ts';

export const REMOTE_VERSION_DEFAULT = 'remote';
const MAX_REMOTE_BYTES = 256 * 1024 * 1024;

/**
 * The hook contract a capsule entry declares (YAML spelling, only the fields it gives). A bare
 * component has no manifest of its own, so this becomes its derived manifest's contract.
 */
export function entryContract(entry: ArtifactEntry): Partial<Record<ContractField, string>> {
  if (entry.runtime !== 'hook') return {};
  const c: HookContract = { binding: entry.binding, execution_mode: entry.executionMode, commit_policy: entry.commitPolicy };
  return Object.fromEntries(CONTRACT_FIELDS.filter((f) => c[f] !== undefined).map((f) => [f, c[f]!]));
}

/**
 * Cache directory of a remote artifact: `<cacheDir>/<source sha256>/<entry name>/`, or
 * `<entry name>@<12 hex>` when the entry declares a hook contract: a bare component's derived
 * manifest carries that contract, so the same bytes under another contract are another artifact
 * (a cache hit must never hand back the contract of an earlier stage).
 */
export function remoteCacheDir(cacheDir: string, sha256: string, entry: ArtifactEntry): string {
  const contract = entryContract(entry);
  const leaf = Object.keys(contract).length ? `${entry.name}@${sha256Hex(JSON.stringify(contract)).slice(0, 12)}` : entry.name;
  return path.join(path.resolve(cacheDir), sha256, leaf);
}

/** Fetches `url` and returns its bytes (E-REG-007 on any transport or HTTP failure). */
export async function fetchBytes(url: string, timeoutMs = 60_000): Promise<Uint8Array> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'follow' });
  } catch (e) {
    throw new MurError(
      'E-REG-007',
      `cannot fetch ${url}: ${(e as Error).cause instanceof Error ? ((e as Error).cause as Error).message : (e as Error).message}`,
      {
        hint: 'check the URL and the network; remote artifacts are fetched at stage time and cached by sha256',
        cause: e,
      },
    );
  }
  if (!res.ok) {
    throw new MurError('E-REG-007', `cannot fetch ${url}: HTTP ${res.status} ${res.statusText}`, {
      hint: 'check the URL; the server must answer 200 with the artifact bytes',
    });
  }
  const buf = new Uint8Array(await res.arrayBuffer());
  if (buf.byteLength > MAX_REMOTE_BYTES)
    throw new MurError('E-REG-007', `${url} is larger than ${MAX_REMOTE_BYTES} bytes`, { hint: 'remote artifacts are limited to 256 MiB' });
  return buf;
}

/** Minimal ustar/GNU tar reader: regular files at the archive root only. */
export function readTar(bytes: Uint8Array): ArtifactFile[] {
  const out: ArtifactFile[] = [];
  const dec = new TextDecoder();
  const str = (off: number, len: number) => {
    const s = bytes.subarray(off, off + len);
    const z = s.indexOf(0);
    return dec.decode(z < 0 ? s : s.subarray(0, z));
  };
  let off = 0;
  let longName: string | undefined;
  while (off + 512 <= bytes.length) {
    if (bytes.subarray(off, off + 512).every((b) => b === 0)) break;
    let name = str(off, 100);
    const size = parseInt(str(off + 124, 12).trim() || '0', 8);
    const type = String.fromCharCode(bytes[off + 156]!);
    const magic = str(off + 257, 6);
    if (magic.startsWith('ustar')) {
      const prefix = str(off + 345, 155);
      if (prefix) name = `${prefix}/${name}`;
    }
    if (!Number.isFinite(size) || size < 0) throw new Error('bad tar header');
    const body = bytes.subarray(off + 512, off + 512 + size);
    off += 512 + Math.ceil(size / 512) * 512;
    if (type === 'L') {
      longName = dec.decode(body).replace(/\0+$/, '');
      continue;
    }
    if (longName) {
      name = longName;
      longName = undefined;
    }
    if (type !== '0' && type !== '\0') continue; // dirs, links, pax headers: ignored
    const clean = name.replace(/^(\.\/)+/, '');
    if (clean === '' || clean.includes('/') || clean === '..' || clean.startsWith('/')) continue; // root files only
    out.push({ name: clean, bytes: new Uint8Array(body) });
  }
  return out;
}

function bundleError(url: string, why: string): MurError {
  return new MurError('E-REG-009', `remote artifact ${url} is not usable: ${why}`, {
    hint: 'serve a bare .wasm component, or a .tar/.tar.gz holding murmur.yaml and one .wasm (skill.md for skills) at its root',
  });
}

/** Turns fetched bytes into registry-layout files (manifest + payload) for `entry`. */
export function unpackRemote(
  entry: ArtifactEntry,
  url: string,
  bytes: Uint8Array,
): { name: string; version: string; runtime: ArtifactEntry['runtime']; files: ArtifactFile[] } {
  const isWasm = bytes[0] === 0 && bytes[1] === 0x61 && bytes[2] === 0x73 && bytes[3] === 0x6d;
  if (isWasm) {
    if (entry.runtime === 'skill') throw bundleError(url, 'a skill has no component; serve a tar with murmur.yaml and skill.md');
    const version = entry.version ?? REMOTE_VERSION_DEFAULT;
    // The derived manifest is the component's own from here on (its digest covers it), so a hook's
    // contract from the capsule entry is written into it: parsed and checked by the one parser.
    const text = stringify({ name: entry.name, version, runtime: entry.runtime, description: `Remote artifact from ${url}`, ...entryContract(entry) });
    parseArtifactManifest(text, `${url}#murmur.yaml`);
    return {
      name: entry.name,
      version,
      runtime: entry.runtime,
      files: [
        { name: ARTIFACT_MANIFEST, bytes: Buffer.from(text) },
        { name: payloadName(entry.name, entry.runtime), bytes },
      ],
    };
  }
  let tarBytes = bytes;
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      // node:zlib only for a gzipped remote artifact (a serving process otherwise never loads it).
      tarBytes = new Uint8Array(process.getBuiltinModule('node:zlib').gunzipSync(bytes));
    } catch (e) {
      throw bundleError(url, `bad gzip data (${(e as Error).message})`);
    }
  }
  let entries: ArtifactFile[];
  try {
    entries = readTar(tarBytes);
  } catch (e) {
    throw bundleError(url, `neither a WebAssembly component nor a tar archive (${(e as Error).message})`);
  }
  const mf = entries.find((f) => f.name === ARTIFACT_MANIFEST);
  if (!mf)
    throw bundleError(
      url,
      entries.length
        ? `no murmur.yaml at the archive root (found ${entries.map((f) => f.name).join(', ')})`
        : 'neither a WebAssembly component nor a tar archive',
    );
  const manifest = parseArtifactManifest(Buffer.from(mf.bytes).toString('utf8'), `${url}#murmur.yaml`);
  let payload: ArtifactFile | undefined;
  if (manifest.runtime === 'skill') payload = entries.find((f) => f.name === SKILL_FILE);
  else {
    const wasm = entries.filter((f) => f.name.endsWith('.wasm'));
    payload =
      wasm.find((f) => f.name === 'component.wasm') ?? wasm.find((f) => f.name === `${manifest.name}.wasm`) ?? (wasm.length === 1 ? wasm[0] : undefined);
  }
  if (!payload) throw bundleError(url, manifest.runtime === 'skill' ? 'no skill.md' : 'no single .wasm component (name it component.wasm)');
  return {
    name: manifest.name,
    version: manifest.version,
    runtime: manifest.runtime,
    files: [
      { name: ARTIFACT_MANIFEST, bytes: mf.bytes },
      { name: payloadName(manifest.name, manifest.runtime), bytes: payload.bytes },
    ],
  };
}

/**
 * Resolves a remote entry: a cache hit is re-verified from disk; otherwise the URL is fetched, the
 * bytes checked against `source.sha256` (E-REG-008, nothing cached on mismatch), unpacked, and
 * written to `<cacheDir>/<sha256>/<name>/`.
 */
export async function resolveRemote(entry: ArtifactEntry, cacheDir: string): Promise<VerifiedArtifact> {
  const src = entry.source!;
  const dir = remoteCacheDir(cacheDir, src.sha256, entry);
  if (!existsSync(dir)) {
    const bytes = await fetchBytes(src.url);
    const got = sha256Hex(bytes);
    if (got !== src.sha256) {
      throw new MurError('E-REG-008', `sha256 mismatch for remote artifact '${entry.name}': ${src.url} hashes to ${got} but murmur.yaml pins ${src.sha256}`, {
        hint: `if the new content is intended, set source.sha256 to ${got}; otherwise the server is serving different bytes than you pinned`,
      });
    }
    const unpacked = unpackRemote(entry, src.url, bytes);
    mkdirSync(path.dirname(dir), { recursive: true });
    if (!existsSync(dir)) {
      try {
        writeArtifactDir(dir, unpacked);
      } catch (e) {
        if (!existsSync(dir)) throw e; // lost a race with a concurrent stage: fine if it exists now
      }
    }
  }
  try {
    return readVerifiedDir(dir);
  } catch (e) {
    if (e instanceof MurError && e.code === 'E-REG-002') {
      throw new MurError(e.code, `remote-cache entry for '${entry.name}': ${e.message}`, {
        hint: `the cached copy of ${src.url} was modified; delete ${dir} and stage again to refetch it`,
        ...(e.location ? { location: e.location } : {}),
        cause: e,
      });
    }
    throw e;
  }
}
