# The capsule runtime image: the same `mur` CLI as a local checkout, compiled to JavaScript, running
#   mur serve /etc/murmur/capsule --a2a-port 8080 --metrics-port 9090 --workdir /var/lib/murmur ...
# as the operator renders it (see docs/operator.md, "Runtime container contract").
#
#   node --import tsx scripts/build-registry.ts .image-inputs/registry   # the built-in drivers, first
#   docker build -t ghcr.io/capsule-operator/runtime:0.1.0 .
# (test/images/build.sh does both, with Debian's Docker engine and a locally made base image.)
# It carries only what it runs: dist/ (tsc output) and the node_modules files that dist/ loads
# (scripts/image-files.ts traces them): no TypeScript loader, no Kubernetes client, no
# componentize/optimize toolchain. Node: the current LTS (24); the code is kept free of
# Node-20-only behaviour and CI also runs on 20.

# 1. Every dependency, for building (tsc, the file tracer).
FROM node:24-bookworm-slim AS deps
WORKDIR /src
COPY package.json package-lock.json ./
# Behind a TLS-intercepting proxy, pass its CA bundle as a build secret (not kept in any layer):
#   docker build --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt ...
RUN --mount=type=secret,id=ca NODE_EXTRA_CA_CERTS=/run/secrets/ca npm ci --ignore-scripts --no-audit --no-fund

# 2. The built-in components (the inference drivers, C: components/) are NOT built here: they come
#    built, published into the registry folder .image-inputs/registry of the build context by
#    scripts/build-registry.ts on the host (test/images/build.sh runs it first), with the same
#    fixture builder, cache and toolchain as the tests. Their toolchain needs wit-bindgen-cli, which
#    is built with cargo (test/fixtures/c-toolchain.sh); the image build has no Rust, and building
#    them twice could make the image's drivers differ from the ones the tests ran. The runtime finds
#    the registry through MURMUR_REGISTRY (below).

# 3. The native addons, compiled for the image's Node against the headers the Node install carries
#    (/usr/local/include/node): no download. node:24-bookworm has python3, make and gcc/g++.
#    better-sqlite3's (the embedded task store, runtime/a2a/store/store.ts) with node-gyp (npm's own
#    copy), optimised for size: SQLite's code is mapped into every serving process and a fault maps
#    the 64 KiB around it, so nearly all of its text ends up resident — 2.0 MB at -O3, 1.1 MB at
#    -Os (an idle `mur serve` 79.0–79.5 MiB against 79.8–80.4; a task runs a handful of
#    statements); the runtime's own memory.node (runtime/memory.ts: freed memory returned to the kernel
#    when idle; runtime/inference/bpe-table-file.ts: the token tables mapped from /opt/murmur/tokens,
#    shared pages instead of each process's copy; runtime/process-guard.ts: secrets kept out of /proc/<pid>/environ and of reach of
#    CAP_SYS_PTRACE) from its three C files, as scripts/build-native.ts builds it.
FROM node:24-bookworm AS sqlite
WORKDIR /src
COPY --from=deps /src/node_modules/better-sqlite3 ./node_modules/better-sqlite3
RUN cd node_modules/better-sqlite3 \
 && CFLAGS=-Os CXXFLAGS=-Os node /usr/local/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js rebuild --release --nodedir=/usr/local --jobs=max
RUN node -e "require('/src/node_modules/better-sqlite3/build/Release/better_sqlite3.node')"
COPY runtime/native/memory.c runtime/native/guard.c runtime/native/caps.c runtime/native/exe.c ./
RUN cc -O2 -shared -fPIC -I/usr/local/include/node -o /src/memory.node memory.c guard.c caps.c exe.c \
 && node -e "const a = require('/src/memory.node'); if (typeof a.trim() !== 'boolean' || typeof a.scrub !== 'function' || typeof a.dropCapabilities !== 'function' || typeof a.unresidentMapped !== 'function' || typeof a.unresidentExecutable !== 'function') process.exit(1)"

# 4. The runtime compiled (npm run build) and the files it loads.
FROM deps AS app
COPY --from=sqlite /src/node_modules/better-sqlite3/build/Release/better_sqlite3.node ./node_modules/better-sqlite3/build/Release/
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY runtime ./runtime
COPY --from=sqlite /src/memory.node ./runtime/native/memory.node
COPY operator ./operator
COPY scripts/image-files.ts scripts/lazy-mime-db.ts scripts/sdk-migrator-imports.ts scripts/build-worker.ts scripts/build-native.ts ./scripts/
RUN npm run build && node --import tsx scripts/image-files.ts runtime /out \
 && mkdir -p /out/var/lib/murmur /out/etc/murmur/capsule

# 5. The runtime image's files, without the caches below.
FROM node:24-bookworm-slim AS runtime
# The root filesystem may be read-only: everything the runtime writes lives under /var/lib/murmur
# (an emptyDir in the pod, a tmpfs or volume under docker). MURMUR_COMPONENT_CACHE holds the
# transpiled components, MURMUR_CACHE_DIR fetched remote artifacts, MURMUR_WORK_ROOT the session
# workdirs. MURMUR_COMPONENT_CACHE_SEED and NODE_COMPILE_CACHE: the read-only caches made below.
COPY --from=app /out/app /app
COPY --from=app /out/etc/murmur /etc/murmur
COPY --from=app --chown=65532:65532 /out/var/lib/murmur /var/lib/murmur
COPY .image-inputs/registry /opt/murmur/registry
# The dynamic loader execute-only: the kernel marks a process non-dumpable when it execs a binary
# or an ELF interpreter it cannot read (fs/binfmt_elf.c: would_dump() on the interpreter), so every
# dynamically linked program a non-root user starts here, node included, is non-dumpable, and no
# tool of the same user can read the runtime's /proc/<pid>/environ, mem or fd/ (where the provider
# key would be). The loader, not node: a changed file of the base layer is copied whole into this
# layer, 0.2 MB for the loader against 120 MB for node. test/security/key-leak.test.ts and
# test/images/runtime-image.test.ts check it.
RUN ld="$(readlink -f /lib64/ld-linux-x86-64.so.2)" && chmod 0711 "$ld" \
 && node -e "process.exit(require('fs').readFileSync('/proc/self/exe').indexOf('/lib64/ld-linux-x86-64.so.2') > 0 ? 0 : 1)"
# (After the RUN above: its node would otherwise write a compile cache of its own, as root.)
# MALLOC_ARENA_MAX=2: glibc gives every thread that allocates an arena of its own and keeps what it
# frees there; the runtime runs a worker thread per component. Measured under the soak
# (bench/soak.ts, 400 tasks of 100 KiB from 32 clients): 42–64 MiB less RSS.
# MALLOC_MMAP_THRESHOLD_=65536: glibc serves an allocation under its mmap threshold from the main
# heap, and raises that threshold (up to 32 MiB) each time it frees a mapped chunk, so the request
# bodies, Buffers and parser memory of a loaded runtime end up in a heap that only ever shrinks
# from its top: under the soak (200 clients, 100 KiB messages) it held 98 MiB for the run. Fixed
# at 64 KiB (which also ends the raising), larger blocks are mapped and unmapped whole: the heap
# 45 MiB, RSS by minute 273–283 MiB against 325–358, as many tasks completed (180-s soaks
# alternating, docs/runtime.md).
# NODE_OPTIONS=--max-old-space-size=512: V8 lets the main heap grow to a multiple of what a full GC
# kept alive, and the multiple follows the heap limit: up to 4 with the limit V8 derives from a
# large machine (no pod limit), 1.4 at 512 MiB. Under the soak (200 clients, 100 KiB messages) the
# main heap held 111 MiB of pages for 52 MiB live, and RSS went 400–460 MiB without this, 250–310
# with it, with as many tasks completed. An env, not an ENTRYPOINT flag, so the operator's
# NODE_OPTIONS (sized to the pod's memory limit: docs/operator.md) replaces it.
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=65536 \
    NODE_OPTIONS=--max-old-space-size=512 \
    MURMUR_WORK_ROOT=/var/lib/murmur \
    MURMUR_REGISTRY=/opt/murmur/registry \
    MURMUR_COMPONENT_CACHE=/var/lib/murmur/cache/components \
    MURMUR_COMPONENT_CACHE_SEED=/opt/murmur/components \
    MURMUR_CACHE_DIR=/var/lib/murmur/cache/artifacts \
    NODE_COMPILE_CACHE=/opt/murmur/compile-cache
# Non-root (the operator's pod securityContext also enforces runAsNonRoot, UID 65532).
USER 65532:65532
WORKDIR /var/lib/murmur
EXPOSE 8080 9090
# --max-semi-space-size=1: V8's young generation (semi-spaces of up to 16 MiB by default) grows
# under the allocation of a task and stays resident, in every isolate of the process (the main
# thread, each component's worker, the token counter): mur serve with a
# driver and one tool idled at 189 MiB without the flag, 153 MiB with it, and 30 tasks took no
# longer (166 → 150 ms per task, one loaded run each; docs/runtime.md#memory-of-a-serving-process).
# --max-opt=2: JavaScript is optimized up to Maglev, never TurboFan. A serving process measured
# right after its start or an idle period (when its bytecode was let go) still spent ≈ 1 ms of
# V8's background threads per task on TurboFan jobs after 300 tasks; Maglev compiles in a fraction
# of that, and warm tasks cost the same CPU either way. Against the reference: time per task
# ×1.28 → ×1.09, peak RSS 98.9 → 92.7 MiB (docs/measurements/reference.md, session 24). Node's
# compile cache is keyed by these flags: the caches stage below runs with the same ones.
# bench/serving.ts imageProcess() reads the node flags of this line and the ENV above.
ENTRYPOINT ["node", "--max-semi-space-size=1", "--max-opt=2", "/app/bin/mur"]

# 6. The caches a start would otherwise fill, made by this image's own runtime as the pod runs it
#    (UID 65532): the built-in drivers transpiled and memory-capped (≈ 1–2 s of CPU per start
#    otherwise), Node's compile cache of the runtime's code (V8 code for the 7 MB main.js), and
#    the token counter's rank tables (built in a worker by every pod's first count otherwise).
FROM runtime AS caches
USER root
RUN mkdir -p /seed && chown 65532:65532 /seed
USER 65532:65532
COPY scripts/seed-image-caches.mjs /tmp/seed-image-caches.mjs
# The ENTRYPOINT's node flags: V8 keys Node's compile cache by them (a cache made without
# --max-opt=2 is never found by the pod's node); the seed passes its own to each mur serve.
RUN MURMUR_COMPONENT_CACHE=/seed/components NODE_COMPILE_CACHE=/seed/compile-cache node --max-semi-space-size=1 --max-opt=2 /tmp/seed-image-caches.mjs \
 && chmod -R a+rX,go-w /seed

FROM runtime
# Root-owned and read-only to the runtime's user: no tool can plant code in them.
COPY --from=caches --chown=0:0 /seed/components /opt/murmur/components
COPY --from=caches --chown=0:0 /seed/compile-cache /opt/murmur/compile-cache
# The token counter's rank tables: a pod's first count reads them instead of building them in a
# worker (a seed root beside the components' seed: runtime/inference/bpe-table-file.ts).
COPY --from=caches --chown=0:0 /seed/tokens /opt/murmur/tokens
# --anonymous as the operator renders it: the Service is fenced by NetworkPolicy (docs/a2a.md);
# mur serve refuses a non-loopback address without authentication unless told.
CMD ["serve", "/etc/murmur/capsule", "--a2a-port", "8080", "--metrics-port", "9090", "--workdir", "/var/lib/murmur", "--host", "0.0.0.0", "--anonymous"]
