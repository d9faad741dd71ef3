// Writes a one-layer image archive from a few files, for `ctr images import` on the real test node
// (no registry is reachable, and these images — pause, busybox, coredns — are single static
// binaries, so an image engine would be a heavy way to make them).
//
//   node oci-image.mjs <name> <ref> <out.tar> <src:dest>... [--busybox] -- <entrypoint> [args...]
//
// The archive is both an OCI image layout (oci-layout, index.json, blobs/) and a `docker save`
// archive (manifest.json), which are the two formats ctr import reads. --busybox adds the applet
// symlinks (/bin/sh, /bin/wget, ...) next to /bin/busybox. A plain tar CLI builds the layer with
// fixed owner and mtime so the same inputs give the same digests.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const argv = process.argv.slice(2);
const sep = argv.indexOf('--');
if (sep < 3) {
  process.stderr.write('usage: oci-image.mjs <name> <ref> <out.tar> <src:dest>... [--busybox] -- <entrypoint> [args...]\n');
  process.exit(1);
}
const [name, ref, out, ...rest] = argv.slice(0, sep);
const entrypoint = argv.slice(sep + 1);
const busybox = rest.includes('--busybox');
const files = rest.filter((a) => a !== '--busybox').map((a) => {
  const i = a.lastIndexOf(':');
  return { src: a.slice(0, i), dest: a.slice(i + 1) };
});

const work = mkdtempSync(join(tmpdir(), `oci-${name}-`));
try {
  const rootfs = join(work, 'rootfs');
  for (const d of ['etc', 'tmp', 'proc', 'sys', 'dev', 'bin', 'var/run']) mkdirSync(join(rootfs, d), { recursive: true });
  chmodSync(join(rootfs, 'tmp'), 0o1777);
  writeFileSync(join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n');
  writeFileSync(join(rootfs, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
  for (const f of files) {
    const to = join(rootfs, f.dest);
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(f.src, to);
    chmodSync(to, 0o755);
  }
  if (busybox) {
    const bb = files.find((f) => f.dest.endsWith('/busybox'));
    if (!bb) throw new Error('--busybox needs a file copied to .../busybox');
    const applets = execFileSync(bb.src, ['--list'], { encoding: 'utf8' }).split('\n').filter((a) => a && a !== 'busybox');
    for (const a of applets) symlinkSync('busybox', join(rootfs, 'bin', a));
  }

  const blobs = join(work, 'layout', 'blobs', 'sha256');
  mkdirSync(blobs, { recursive: true });
  const layerTmp = join(work, 'layer.tar');
  execFileSync('tar', ['--sort=name', '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '-C', rootfs, '-cf', layerTmp, '.']);
  const put = (buf) => {
    const digest = createHash('sha256').update(buf).digest('hex');
    writeFileSync(join(blobs, digest), buf);
    return { digest: `sha256:${digest}`, size: buf.length, file: `blobs/sha256/${digest}` };
  };
  const layer = put(readFileSync(layerTmp));
  const config = put(Buffer.from(JSON.stringify({
    architecture: 'amd64',
    os: 'linux',
    // busybox: a command, not an entrypoint, so `command:`/`args:` of a pod replace it as with the real image
    config: { ...(busybox ? { Cmd: entrypoint } : { Entrypoint: entrypoint }), Env: ['PATH=/bin:/usr/bin:/sbin:/usr/sbin'], WorkingDir: '/' },
    rootfs: { type: 'layers', diff_ids: [layer.digest] },
    history: [{ created_by: `test/cluster/node/oci-image.mjs ${name}` }],
  })));
  const manifest = put(Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: config.digest, size: config.size },
    layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: layer.digest, size: layer.size }],
  })));
  const layout = join(work, 'layout');
  writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  writeFileSync(join(layout, 'index.json'), JSON.stringify({
    schemaVersion: 2,
    manifests: [{
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      digest: manifest.digest,
      size: manifest.size,
      platform: { architecture: 'amd64', os: 'linux' },
      annotations: { 'io.containerd.image.name': ref, 'org.opencontainers.image.ref.name': ref.split(':').pop() },
    }],
  }));
  writeFileSync(join(layout, 'manifest.json'), JSON.stringify([{ Config: config.file, RepoTags: [ref], Layers: [layer.file] }]));
  mkdirSync(dirname(out), { recursive: true });
  execFileSync('tar', ['--sort=name', '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '-C', layout, '-cf', `${out}.tmp`, '.']);
  renameSync(`${out}.tmp`, out);
  process.stderr.write(`${out}: ${ref} (${(layer.size / 1e6).toFixed(1)} MB layer)\n`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
