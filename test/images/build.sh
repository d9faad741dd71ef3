#!/usr/bin/env bash
# Builds the project's images from `Dockerfile` and `operator/Dockerfile` as they are, with
# Debian's Docker engine (engine.sh), on a locally created base image (base.sh):
#   capsule-runtime:dev   ($CAPSULE_RUNTIME_IMAGE)     .cache/images/capsule-runtime.tar
#   capsule-operator:dev  ($CAPSULE_OPERATOR_IMAGE)    .cache/images/capsule-operator.tar
# The .tar files are `docker save` archives (`ctr -n k8s.io images import <file>` loads them).
# .cache/images/images.env names them (sourceable).
#
# Cached: each image is rebuilt only when a hash of its inputs changes (the base: base.sh; an
# image: its Dockerfile, .dockerignore and the files its build context holds). A cached run
# needs no engine at all unless the images must be present in it (CAPSULE_IMAGES_LOAD=1, or an
# engine is already running): then missing images are `docker load`ed from the archives.
# An engine this script had to start is stopped at exit unless CAPSULE_ENGINE_KEEP=1.
# Prints the time of each step. Serialised by flock on .cache/images/build.lock.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE="${CAPSULE_IMAGES_CACHE:-$ROOT/.cache/images}"
mkdir -p "$CACHE"; CACHE="$(cd "$CACHE" && pwd)"
HERE="$ROOT/test/images"
DOCKER="${DOCKER:-/usr/bin/docker}"
export DOCKER="$DOCKER"
RUNTIME_IMAGE="${CAPSULE_RUNTIME_IMAGE:-capsule-runtime:dev}"
OPERATOR_IMAGE="${CAPSULE_OPERATOR_IMAGE:-capsule-operator:dev}"
BASE_IMAGE=node:24-bookworm-slim
BUILD_BASE_IMAGE=node:24-bookworm   # the runtime Dockerfile's addon build stage (base.sh makes both)
cd "$ROOT"

now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f s", b-a}'; }
T0="$(now)"

exec 9>"$CACHE/build.lock"
if ! flock -n 9; then echo "[images] another build holds $CACHE/build.lock: waiting"; flock 9; fi

# The files of the build context (what .dockerignore lets through), tracked or not, as git sees
# them, plus the given extra files; hashed by content.
context_hash() {
  {
    git ls-files -co --exclude-standard -- . ':!:node_modules' ':!:dist' ':!:.cache' ':!:coverage' \
      | grep -v -E '(^|/)(\.git|node_modules|dist|\.cache|coverage|tmp)/|\.log$|\.wasm$' ; printf '%s\n' "$@"
  } | sort -u | while read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done | tr '\n' '\0' | xargs -0 sha256sum | sha256sum | cut -c1-16
}

# The built-in drivers (C components) are built here, by the fixture builder the tests use (cached
# in .cache/fixtures; the C toolchain installed on first use), and published into the registry
# folder the Dockerfile copies (.image-inputs/registry, in the build context, git-ignored): the
# image build has no Rust for wit-bindgen (see the Dockerfile). Made afresh each time (a published
# version never changes content, and the drivers' may have); the files are part of the context hash.
t="$(now)"
rm -rf "$ROOT/.image-inputs/registry.tmp"
node --import tsx scripts/build-registry.ts "$ROOT/.image-inputs/registry.tmp" >"$CACHE/build-drivers.log" 2>&1 || {
  echo "[images] scripts/build-registry.ts failed; its output:" >&2; cat "$CACHE/build-drivers.log" >&2; exit 1; }
rm -rf "$ROOT/.image-inputs/registry" && mv "$ROOT/.image-inputs/registry.tmp" "$ROOT/.image-inputs/registry"
echo "[images] built-in drivers in .image-inputs/registry in $(took "$t")"

BASE_HASH="$(cat "$HERE/base.sh" | sha256sum | cut -c1-16)"
CONTEXT_HASH="$(context_hash $(find .image-inputs/registry -type f | sort))"
RUNTIME_HASH="$(printf '%s %s %s' "$BASE_HASH" "$CONTEXT_HASH" "$(sha256sum Dockerfile)" | sha256sum | cut -c1-16)"
OPERATOR_HASH="$(printf '%s %s %s' "$BASE_HASH" "$CONTEXT_HASH" "$(sha256sum operator/Dockerfile)" | sha256sum | cut -c1-16)"
RUNTIME_TAR="$CACHE/capsule-runtime.tar"
OPERATOR_TAR="$CACHE/capsule-operator.tar"

fresh() { [ -s "$2" ] && [ "$(cat "$2.hash" 2>/dev/null)" = "$1" ]; }

ENGINE_STARTED=""
engine_up() {
  export DOCKER_HOST="unix://${CAPSULE_ENGINE_DIR:-$ROOT/.cache/images/engine}/docker.sock"
  if ! timeout 10 "$DOCKER" version >/dev/null 2>&1; then
    bash "$HERE/engine.sh" start
    ENGINE_STARTED=1
  fi
}
cleanup() {
  if [ -n "$ENGINE_STARTED" ] && [ "${CAPSULE_ENGINE_KEEP:-}" != 1 ]; then bash "$HERE/engine.sh" stop; fi
}
trap cleanup EXIT

# An image in the engine carrying the label of its current hash.
in_engine() { [ "$("$DOCKER" image inspect "$1" --format '{{index .Config.Labels "org.capsule-operator.inputs"}}' 2>/dev/null)" = "$2" ]; }

if fresh "$RUNTIME_HASH" "$RUNTIME_TAR" && fresh "$OPERATOR_HASH" "$OPERATOR_TAR"; then
  echo "[images] runtime $RUNTIME_HASH and operator $OPERATOR_HASH archives up to date"
  if [ "${CAPSULE_IMAGES_LOAD:-}" = 1 ] || [ -S "${CAPSULE_ENGINE_DIR:-$ROOT/.cache/images/engine}/docker.sock" ]; then
    engine_up
    for pair in "$RUNTIME_IMAGE|$RUNTIME_HASH|$RUNTIME_TAR" "$OPERATOR_IMAGE|$OPERATOR_HASH|$OPERATOR_TAR"; do
      IFS='|' read -r img h tar <<<"$pair"
      if ! in_engine "$img" "$h"; then t="$(now)"; "$DOCKER" load -q -i "$tar" >/dev/null; echo "[images] loaded $img from $tar in $(took "$t")"; fi
    done
  fi
else
  engine_up
  if [ "$(cat "$CACHE/base.hash" 2>/dev/null)" != "$BASE_HASH:$("$DOCKER" image inspect "$BASE_IMAGE" --format '{{.Id}}' 2>/dev/null || true)" ] \
     || ! "$DOCKER" image inspect "$BUILD_BASE_IMAGE" >/dev/null 2>&1; then
    t="$(now)"
    bash "$HERE/base.sh" "$CACHE"
    echo "$BASE_HASH:$("$DOCKER" image inspect "$BASE_IMAGE" --format '{{.Id}}')" >"$CACHE/base.hash"
    echo "[images] base images $BASE_IMAGE and $BUILD_BASE_IMAGE in $(took "$t")"
  else
    echo "[images] base image $BASE_IMAGE up to date ($BASE_HASH)"
  fi
  build() { # image hash tar dockerfile
    local img="$1" h="$2" tar="$3" df="$4" t
    if fresh "$h" "$tar" && in_engine "$img" "$h"; then echo "[images] $img up to date ($h)"; return 0; fi
    t="$(now)"
    # --network host: the engine has no bridge (engine.sh), and RUN npm ci reaches the registry.
    # The machine's CA bundle (this machine reaches the npm registry through a TLS-intercepting
    # proxy) as a build secret: RUN npm ci trusts it, no layer keeps it (see the Dockerfiles).
    local ca=() cafile="${NODE_EXTRA_CA_CERTS:-$(npm config get cafile 2>/dev/null || true)}"
    if [ -n "$cafile" ] && [ "$cafile" != null ] && [ "$cafile" != undefined ] && [ -s "$cafile" ]; then ca=(--secret "id=ca,src=$cafile"); fi
    DOCKER_BUILDKIT=1 "$DOCKER" build --network host --progress plain "${ca[@]}" -f "$df" -t "$img" \
      --label "org.capsule-operator.inputs=$h" . >"$CACHE/build-$(basename "$tar" .tar).log" 2>&1 || {
      echo "[images] docker build -f $df failed; last lines of $CACHE/build-$(basename "$tar" .tar).log:" >&2
      tail -40 "$CACHE/build-$(basename "$tar" .tar).log" >&2; exit 1; }
    echo "[images] built $img from $df in $(took "$t")"
    t="$(now)"
    "$DOCKER" save -o "$tar.tmp" "$img" && mv "$tar.tmp" "$tar" && echo "$h" >"$tar.hash"
    echo "[images] saved $img to $tar ($(du -m "$tar" | cut -f1) MB) in $(took "$t")"
  }
  build "$RUNTIME_IMAGE" "$RUNTIME_HASH" "$RUNTIME_TAR" Dockerfile
  build "$OPERATOR_IMAGE" "$OPERATOR_HASH" "$OPERATOR_TAR" operator/Dockerfile
fi

cat >"$CACHE/images.env" <<ENV
CAPSULE_RUNTIME_IMAGE=$RUNTIME_IMAGE
CAPSULE_RUNTIME_TAR=$RUNTIME_TAR
CAPSULE_RUNTIME_HASH=$RUNTIME_HASH
CAPSULE_OPERATOR_IMAGE=$OPERATOR_IMAGE
CAPSULE_OPERATOR_TAR=$OPERATOR_TAR
CAPSULE_OPERATOR_HASH=$OPERATOR_HASH
ENV
echo "[images] done in $(took "$T0") ($CACHE/images.env)"
