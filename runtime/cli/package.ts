/**
 * `mur pack | publish | install | pull`: bring your own component without writing TypeScript.
 *
 *   mur pack <artifact-dir> [-o FILE]                 folder → <name>-<version>.mur.zip (checked)
 *   mur publish <artifact-dir|pkg.mur.zip> --registry DIR | --oci REF
 *   mur install <pkg.mur.zip> [--capsule DIR] [--registry DIR]   into a capsule; updates murmur.lock
 *   mur pull <registry>/<repo>:<tag>[@sha256:…] [--capsule DIR] [--name N --version V --runtime R]
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { MurError } from '../errors.ts';
import { helpText, parseArgs, type FlagSpec } from './args.ts';
import { checkPin, lockPath, readLock, upsertLock, writeLockIfWritable } from '../registry/lock.ts';
import { installPackage, packArtifact, readArtifactFolder, readPackage, PACKAGE_SUFFIX } from '../registry/package.ts';
import { requireComponent } from '../registry/component-check.ts';
import { formatOciRef, parseOciRef, pullWasm, pushWasm } from '../registry/oci.ts';

const PACK_FLAGS: FlagSpec = {
  output: { type: 'string', help: 'package file to write (default: ./<name>-<version>.mur.zip)' },
  help: { type: 'boolean', help: 'show this help' },
};
const PUBLISH_FLAGS: FlagSpec = {
  registry: { type: 'string', help: 'local registry folder to publish into' },
  oci: { type: 'string', help: 'OCI reference to push to, <registry>/<repo>:<tag> (Wasm OCI artifact layout)' },
  help: { type: 'boolean', help: 'show this help' },
};
const INSTALL_FLAGS: FlagSpec = {
  capsule: { type: 'string', help: 'capsule folder whose registry and murmur.lock are updated (default: .)' },
  registry: { type: 'string', help: 'registry folder (default: <capsule>/registry)' },
  help: { type: 'boolean', help: 'show this help' },
};
const PULL_FLAGS: FlagSpec = {
  ...INSTALL_FLAGS,
  name: { type: 'string', help: 'artifact name (default: the last part of the repository)' },
  version: { type: 'string', help: 'artifact version (default: the tag)' },
  runtime: { type: 'string', help: 'tool or driver (default: tool)', default: 'tool' },
};

export const PACKAGE_HELP: Record<string, string> = {
  pack: helpText(
    'mur pack <artifact-dir> [--output FILE]',
    'Packs an artifact folder (murmur.yaml + its component, or exactly its requires_files) into a .mur.zip,\nafter checking the component is a WebAssembly component exporting what its runtime needs\n(murmur:tool/run@0.1.0 for tools and drivers, murmur:hook/lifecycle for hooks). Prints the file and its sha256.',
    PACK_FLAGS,
  ),
  publish: helpText(
    'mur publish <artifact-dir | package.mur.zip> (--registry DIR | --oci REGISTRY/REPO:TAG)',
    'Publishes into a local registry folder (<registry>/<name>/<version>/), or pushes the component to an OCI\nregistry as a Wasm OCI artifact and prints the digest-pinned reference to put in source.oci.',
    PUBLISH_FLAGS,
  ),
  install: helpText(
    'mur install <package.mur.zip> [--capsule DIR] [--registry DIR]',
    "Installs a package (made by mur pack, or the reference runtime's .mur.zip as it is) into the capsule's\nregistry and pins it in the capsule's murmur.lock. Then add {name, version, runtime} to its murmur.yaml.",
    INSTALL_FLAGS,
  ),
  pull: helpText(
    'mur pull <registry>/<repo>:<tag>[@sha256:<hex>] [--capsule DIR] [--name N] [--version V] [--runtime tool|driver]',
    "Pulls a Wasm OCI artifact (verified against its digest), installs it into the capsule's registry and pins\nit in murmur.lock. Prints the digest-pinned reference for source.oci.",
    PULL_FLAGS,
  ),
};

function lockInto(capsuleDir: string, entry: { name: string; version: string; sha256: string; packageSha256?: string }, out: (s: string) => void): void {
  if (!existsSync(path.join(capsuleDir, 'murmur.yaml'))) {
    out(`(no murmur.yaml in ${capsuleDir}: murmur.lock not updated)`);
    return;
  }
  const lock = readLock(capsuleDir);
  const conflict = checkPin(lock, lockPath(capsuleDir), entry);
  // A deliberate install moves the pin of that one artifact; say so.
  if (conflict) out(`murmur.lock: moving the pin of ${entry.name} (${conflict.message})`);
  const state = writeLockIfWritable(capsuleDir, upsertLock(lock, [entry]));
  out(`murmur.lock ${state === 'read-only' ? 'not written (read-only folder)' : lock ? 'updated' : 'created'}: ${entry.name} ${entry.version} ${entry.sha256}`);
}

/** `mur publish --oci`: a package or artifact folder pushed as a Wasm OCI artifact, its pinned reference printed. */
async function publishToOci(target: string, oci: string, isPkg: boolean, out: (s: string) => void): Promise<number> {
  const ref = parseOciRef(oci);
  if (!ref || ref.digest)
    throw new MurError('E-CLI-022', `--oci '${oci}' is not <registry>/<repo>:<tag>`, {
      hint: 'e.g. --oci ghcr.io/acme/echo-tool:1.0.0 (the digest is printed after the push)',
    });
  const a = isPkg
    ? (() => {
        const p = readPackage(readFileSync(target), target);
        return { manifest: p.manifest, payload: p.payload, payloadName: p.payloadName };
      })()
    : (() => {
        const f = readArtifactFolder(target);
        return { manifest: f.manifest, payload: f.files.get(f.payloadName)!, payloadName: f.payloadName };
      })();
  if (a.manifest.runtime === 'skill')
    throw new MurError('E-CLI-022', 'a skill has no component to push as a Wasm OCI artifact', {
      hint: 'publish skills to a registry folder (--registry)',
    });
  await requireComponent(a.payload, a.manifest.runtime, a.payloadName, a.manifest.roleFromEntry);
  const digest = await pushWasm(
    { ...ref, tag: ref.tag ?? a.manifest.version },
    a.payload,
    {
      'org.opencontainers.image.title': a.manifest.name,
      'org.opencontainers.image.version': a.manifest.version,
    },
    `${a.manifest.name}.wasm`,
  );
  const pinned = formatOciRef({ ...ref, tag: ref.tag ?? a.manifest.version, digest });
  out(`pushed ${a.manifest.name} ${a.manifest.version} to ${pinned}`);
  out(`in murmur.yaml: - {name: ${a.manifest.name}, runtime: ${a.manifest.runtime}, source: {oci: "${pinned}"}}`);
  return 0;
}

/** `mur pull`: a Wasm OCI artifact into the capsule's registry folder, pinned in murmur.lock. */
async function pullCommand(
  target: string,
  flags: Record<string, string | number | boolean | undefined>,
  registryDir: string,
  capsuleDir: string,
  out: (s: string) => void,
): Promise<number> {
  const ref = parseOciRef(target);
  if (!ref)
    throw new MurError('E-CLI-022', `'${target}' is not an OCI reference <registry>/<repo>:<tag>[@sha256:<hex>]`, {
      hint: 'e.g. mur pull ghcr.io/acme/echo-tool:1.0.0',
    });
  const runtime = String(flags.runtime);
  if (runtime !== 'tool' && runtime !== 'driver')
    throw new MurError('E-CLI-022', `--runtime must be tool or driver, not '${runtime}'`, {
      hint: 'hooks need their contract in a murmur.yaml: publish them as a .mur.zip package',
    });
  const { component, manifestDigest } = await pullWasm(ref);
  const name = String(flags.name ?? ref.repository.split('/').pop());
  const version = String(flags.version ?? ref.tag ?? manifestDigest.slice(7, 19));
  await requireComponent(component, runtime, `oci://${ref.raw}`);
  const { publishFiles } = await import('../registry/registry.ts');
  const { parseArtifactManifest } = await import('../manifest/artifact.ts');
  const { stringify } = await import('yaml');
  const text = stringify({ name, version, runtime, description: `OCI artifact ${formatOciRef({ ...ref, digest: manifestDigest })}` });
  const mf = parseArtifactManifest(text, `oci://${ref.raw}#murmur.yaml`);
  const r = publishFiles(registryDir, mf, Buffer.from(text), component, `oci://${ref.raw}#murmur.yaml`);
  const pinned = formatOciRef({ ...ref, digest: manifestDigest });
  out(`pulled ${pinned} as ${r.name} ${r.version} (${r.runtime}) into ${r.dir}`);
  lockInto(capsuleDir, { name: r.name, version: r.version, sha256: r.sha256 }, out);
  out(`in murmur.yaml: - {name: ${r.name}, version: "${r.version}", runtime: ${r.runtime}}   (or source: {oci: "${pinned}"})`);
  return 0;
}

export async function packageCommand(cmd: 'pack' | 'publish' | 'install' | 'pull', argv: string[], out: (s: string) => void): Promise<number> {
  const spec = cmd === 'pack' ? PACK_FLAGS : cmd === 'publish' ? PUBLISH_FLAGS : cmd === 'install' ? INSTALL_FLAGS : PULL_FLAGS;
  const { flags, positionals } = parseArgs(argv, spec);
  if (flags.help) {
    out(PACKAGE_HELP[cmd]!);
    return 0;
  }
  const target = positionals[0];
  if (!target)
    throw new MurError(
      'E-CLI-020',
      `mur ${cmd} needs ${cmd === 'pull' ? 'an OCI reference' : cmd === 'install' ? 'a .mur.zip package' : 'an artifact folder'}`,
      { hint: PACKAGE_HELP[cmd]!.split('\n')[0]! },
    );
  const capsuleDir = path.resolve(String(flags.capsule ?? '.'));
  // install/pull write into the capsule's own registry folder, which `mur run` reads first.
  const registryDir = path.resolve(String(flags.registry ?? path.join(capsuleDir, 'registry')));

  if (cmd === 'pack') {
    const p = await packArtifact(target);
    const file = path.resolve(String(flags.output ?? p.fileName));
    writeFileSync(file, p.bytes);
    out(`packed ${p.manifest.name} ${p.manifest.version} (${p.manifest.runtime}): ${file}`);
    out(`sha256 ${p.sha256}`);
    return 0;
  }

  if (cmd === 'publish') {
    if (!flags.registry && !flags.oci)
      throw new MurError('E-CLI-021', 'mur publish needs --registry DIR or --oci REGISTRY/REPO:TAG', { hint: PACKAGE_HELP.publish!.split('\n')[0]! });
    const isPkg = target.endsWith(PACKAGE_SUFFIX) && existsSync(target) && statSync(target).isFile();
    if (flags.oci) return publishToOci(target, String(flags.oci), isPkg, out);
    let r: Awaited<ReturnType<typeof installPackage>>;
    if (isPkg) r = await installPackage(registryDir, target);
    else {
      // Pack first: the same checks (component of the right world), then publish the package's content.
      const p = await packArtifact(target);
      const tmpFile = path.join(registryDir, `.${p.fileName}.${process.pid}.tmp`);
      const { mkdirSync, rmSync } = await import('node:fs');
      mkdirSync(registryDir, { recursive: true });
      writeFileSync(tmpFile, p.bytes);
      try {
        r = await installPackage(registryDir, tmpFile);
      } finally {
        rmSync(tmpFile, { force: true });
      }
    }
    out(`published ${r.name} ${r.version} (${r.runtime}) to ${r.dir}`);
    out(`sha256 ${r.sha256}`);
    return 0;
  }

  if (cmd === 'install') {
    if (!target.endsWith(PACKAGE_SUFFIX))
      throw new MurError('E-CLI-023', `mur install takes a ${PACKAGE_SUFFIX} package file, not '${target}'`, {
        hint: 'make one with `mur pack <artifact-dir>`; to pull from an OCI registry use `mur pull <ref>`',
      });
    const r = await installPackage(registryDir, target);
    out(`installed ${r.name} ${r.version} (${r.runtime}) into ${r.dir}`);
    lockInto(capsuleDir, { name: r.name, version: r.version, sha256: r.sha256, packageSha256: r.packageSha256 }, out);
    return 0;
  }

  return pullCommand(target, flags, registryDir, capsuleDir, out);
}
