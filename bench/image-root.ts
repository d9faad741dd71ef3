/**
 * The runtime image's own files run as a process on this machine, so a bench measures what a pod
 * runs — the image's Node (24), its /app (the compiled runtime and the node_modules files it
 * loads, better-sqlite3 built for that Node), its ENV (MALLOC_ARENA_MAX, NODE_COMPILE_CACHE, the
 * seeded component cache) and its ENTRYPOINT flags — and not the checkout's dist/ on the machine's
 * Node 20, which idles 40 MiB lower than Node 24 with the same code (measured: docs/runtime.md).
 *
 * The image comes from test/images/build.sh (built, or found current by the hash of its inputs);
 * its `docker save` archive is unpacked layer by layer (whiteouts applied) into
 * .cache/bench/runtime-root-<hash>/ once per image. The process runs in a chroot of it, in a mount
 * namespace of its own (`unshare -m`, so nothing stays mounted when it ends): the root read-only
 * and /var/lib/murmur a tmpfs, as a pod has them, with /proc, /dev and /tmp bound from the host:
 * paths under /tmp (capsules, registries, caches a bench makes) are the
 * same inside and out, and the process has the host's PID and network (loopback). It runs as root,
 * not as the image's UID 65532 (the bench's folders are root's); no cgroup limit, as on the host.
 * Node's compile cache in the image is the pod user's folder; the unpacked copy links root's name
 * to it (compileCacheAsRoot), so a bench's start reads it as a pod's does.
 * `unshare` and `sh` exec in place, so the PID returned is the runtime's own (RSS from /proc).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PROJECT_ROOT } from '../runtime/wit/packages.ts';

const TAR = join(PROJECT_ROOT, '.cache/images/capsule-runtime.tar');
const ROOTS = join(PROJECT_ROOT, '.cache/bench');

export interface ImageRoot {
  /** The unpacked root filesystem. */
  root: string;
  /** The image's ENTRYPOINT (e.g. node --max-semi-space-size=1 /app/bin/mur). */
  entrypoint: string[];
  /** The image's ENV. */
  env: Record<string, string>;
  /** NODE_VERSION from the image's ENV, for the report. */
  nodeVersion: string;
}

function sh(cmd: string, what: string): string {
  const r = spawnSync('sh', ['-c', cmd], { encoding: 'utf8', maxBuffer: 64 * 1048576 });
  if (r.status !== 0) throw new Error(`${what} failed (exit ${r.status}): ${r.stderr.trim().slice(-2000)}`);
  return r.stdout;
}

const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** Unpacks one layer (a tar file) over `root`: its whiteouts first remove what lower layers put there. */
function unpackLayer(layerTar: string, root: string): void {
  const entries = sh(`tar -tf ${q(layerTar)}`, `listing ${layerTar}`)
    .split('\n')
    .filter(Boolean);
  for (const e of entries) {
    const name = e.replace(/^\.\//, '').replace(/\/$/, '');
    const base = name.split('/').pop()!;
    if (!base.startsWith('.wh.')) continue;
    const dir = join(root, dirname(name));
    if (base === '.wh..wh..opq') {
      if (existsSync(dir)) for (const f of readdirSync(dir)) rmSync(join(dir, f), { recursive: true, force: true });
    } else {
      rmSync(join(dir, base.slice(4)), { recursive: true, force: true });
    }
  }
  // Device nodes are not needed (the host's /dev is bound over it).
  sh(`tar -xf ${q(layerTar)} -C ${q(root)} --exclude='.wh.*' --exclude='dev/*'`, `unpacking ${layerTar}`);
}

export interface ImageConfig {
  Env?: string[];
  Entrypoint?: string[];
}

/**
 * Unpacks a `docker save` archive's layers, lowest first, into `root`, and returns the image's
 * config (ENV, ENTRYPOINT). The archive is read once, into a temporary folder removed after.
 */
export function unpackImage(tar: string, root: string): { layers: number; config: ImageConfig } {
  const work = mkdtempSync(join(tmpdir(), 'image-archive-'));
  try {
    sh(`tar -xf ${q(tar)} -C ${q(work)}`, `reading ${tar}`);
    const read = (f: string, what: string): string => {
      try {
        return readFileSync(join(work, f), 'utf8');
      } catch {
        throw new Error(`${what} failed: ${tar} has no ${f} (not a docker save archive)`);
      }
    };
    const m = JSON.parse(read('manifest.json', 'reading the image manifest')) as { Config: string; Layers: string[] }[];
    if (m.length !== 1) throw new Error(`${tar} holds ${m.length} images; one was expected`);
    const { Config, Layers } = m[0]!;
    const config = (JSON.parse(read(Config, 'reading the image config')) as { config: ImageConfig }).config;
    mkdirSync(root, { recursive: true });
    for (const layer of Layers) unpackLayer(join(work, layer), root);
    return { layers: Layers.length, config };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Builds the runtime image if its inputs changed (test/images/build.sh, which starts and stops its
 * own Docker engine), then unpacks it once per image hash. Prints what it does: a build takes
 * minutes.
 */
export function imageRoot(log: (line: string) => void = (l) => console.error(l)): ImageRoot {
  if (process.platform !== 'linux' || process.getuid?.() !== 0)
    throw new Error('running the runtime image as a process needs Linux and root (a chroot in a mount namespace of its own)');
  // A root unpacked before (a copy of one under .cache/bench/): measured as it is, not rebuilt. The
  // checkout is shared and the image's inputs change under a long bench; a build would unpack the
  // new image and remove the root the running arms chroot into.
  const fixed = process.env.MURMUR_BENCH_IMAGE_ROOT;
  if (fixed) {
    log(`[image-root] ${fixed} (MURMUR_BENCH_IMAGE_ROOT: not rebuilt)`);
    return rootAt(fixed);
  }
  log('[image-root] test/images/build.sh (builds the images only when their inputs changed)');
  const b = spawnSync('bash', [join(PROJECT_ROOT, 'test/images/build.sh')], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (b.status !== 0) throw new Error(`test/images/build.sh failed (exit ${b.status}); its output is above`);
  const hash = readFileSync(`${TAR}.hash`, 'utf8').trim();
  const root = join(ROOTS, `runtime-root-${hash}`);
  // The config is kept beside the files: a later start reads neither the archive nor its layers.
  const marker = join(root, '.unpacked.json');
  if (!existsSync(marker)) {
    mkdirSync(ROOTS, { recursive: true });
    // One unpacked image at a time: an older one is only disk.
    for (const f of readdirSync(ROOTS)) if (f.startsWith('runtime-root-')) rmSync(join(ROOTS, f), { recursive: true, force: true });
    const t = performance.now();
    const { layers, config } = unpackImage(TAR, root);
    const { NODE_COMPILE_CACHE } = rootEnv(config);
    if (NODE_COMPILE_CACHE) compileCacheAsRoot(join(root, NODE_COMPILE_CACHE));
    writeFileSync(marker, JSON.stringify({ hash, config }));
    log(`[image-root] unpacked ${layers} layers into ${root} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
  return rootAt(root);
}

/**
 * Node's compile cache keeps one folder per user (`v<version>-<arch>-<hash>-<uid>`); the image's
 * is made as the pod's user, 65532, and a bench runs the image as root (see above), whose folder
 * does not exist: every arm then compiled the runtime's code at each start, which no pod does.
 * In the bench's unpacked copy only, root's folder is a link to the pod's.
 */
export function compileCacheAsRoot(cacheDir: string): string[] {
  if (!existsSync(cacheDir)) return [];
  const linked: string[] = [];
  for (const f of readdirSync(cacheDir)) {
    const m = /^(.*)-65532$/.exec(f);
    if (!m || existsSync(join(cacheDir, `${m[1]}-0`))) continue;
    symlinkSync(f, join(cacheDir, `${m[1]}-0`));
    linked.push(`${m[1]}-0`);
  }
  return linked;
}

function rootEnv(config: ImageConfig): Record<string, string> {
  const env: Record<string, string> = {};
  for (const kv of config.Env ?? []) {
    const i = kv.indexOf('=');
    env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return env;
}

/** The image unpacked at `root` (its `.unpacked.json` holds the image's config). */
export function rootAt(root: string): ImageRoot {
  const marker = join(root, '.unpacked.json');
  const { config } = JSON.parse(readFileSync(marker, 'utf8')) as { config: ImageConfig };
  const env = rootEnv(config);
  const entrypoint = config.Entrypoint ?? [];
  if (!entrypoint.length) throw new Error('the runtime image has no ENTRYPOINT');
  return { root, entrypoint, env, nodeVersion: env.NODE_VERSION ?? 'unknown' };
}

/**
 * The command that runs `<ENTRYPOINT> ...args` of the image in its chroot (spawn it with the
 * image's ENV overlaid by the caller's: `{ ...img.env, ...env }`). Paths in args and env must be
 * under /tmp or TMPDIR (bound from the host) or inside the image.
 */
export function imageCommand(img: ImageRoot, args: string[], nodeFlags: string[] = []): { cmd: string; args: string[] } {
  const r = q(img.root);
  // The bench's temp folders: /tmp, and TMPDIR when it is elsewhere.
  const t = tmpdir();
  const extra = t === '/tmp' || t.startsWith('/tmp/') ? [] : [`mkdir -p ${r}${q(t)}`, `mount --bind ${q(t)} ${r}${q(t)}`];
  const script = [
    // Read-only, as the operator's pods run it: nothing a run writes (a compile cache under
    // /opt/murmur, say) reaches the next run.
    `mount --bind ${r} ${r}`,
    `mount -o remount,bind,ro ${r}`,
    `mount --rbind /proc ${r}/proc`,
    `mount --rbind /dev ${r}/dev`,
    `mount --bind /tmp ${r}/tmp`,
    ...extra,
    `mount -t tmpfs tmpfs ${r}/var/lib/murmur`,
    // Node flags of the caller's go after the ENTRYPOINT's own (its `node` first): the later wins.
    `exec chroot ${r} ${[img.entrypoint[0]!, ...img.entrypoint.slice(1, -1), ...nodeFlags, img.entrypoint.at(-1)!, ...args].map(q).join(' ')}`,
  ].join(' && ');
  return { cmd: 'unshare', args: ['-m', '--propagation', 'private', 'sh', '-c', script] };
}
