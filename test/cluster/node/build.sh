#!/usr/bin/env bash
# Builds and installs everything a REAL test node needs (test/cluster/node/README.md):
#   apt (Debian): runc, containernetworking-plugins, iptables, ipset, conntrack, socat, gcc + libc6-dev
#   Go module proxy:
#     kubelet, kube-proxy            test/cluster/go/k8s        (same k8s.io/kubernetes as the control plane)
#     containerd, shim, ctr          test/cluster/node/go/containerd
#     coredns (cluster plugins only) test/cluster/node/go/coredns
#     kube-router (firewall only)    test/cluster/node/go/kube-router
#   pause (pause.c, gcc -static) and busybox (busybox-static .deb, apt-get download)
#   OCI archives of the pause, busybox and coredns images (oci-image.mjs) for `ctr images import`
# into <repo>/.cache/node/bin (override with NODE_BIN_DIR) and <repo>/.cache/node/images.
#
#   build.sh [step ...]     steps: apt pause busybox containerd kubelet kube-proxy coredns kube-router images
#                           (default: all, in that order). FORCE=1 rebuilds.
#
# Idempotent: each step writes <bin>/.stamp-<step> holding a hash of its inputs (this script, the
# module's go.mod/go.sum, the sources); a step whose stamp matches and whose outputs exist is skipped
# without needing Go. Concurrent runs are serialised with flock on <bin>/.lock. The Go builds run
# under `nice -n 10` so that the tests of everyone else on the machine keep their CPU share.
# Exit codes: 0 ok, 2 Go missing, 3 not Linux/root (apt step), other = build error.
set -euo pipefail

main() {
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
BIN="${NODE_BIN_DIR:-$ROOT/.cache/node/bin}"
IMAGES="${NODE_IMAGES_DIR:-$ROOT/.cache/node/images}"
DEBS="$ROOT/.cache/node/debs"
K8SMOD="$ROOT/test/cluster/go/k8s"
NODEMODS="$HERE/go"
START=$(date +%s)

log() { printf '[node-build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
elapsed() { local s=$(( $(date +%s) - START )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }
load() { cut -d' ' -f1-3 /proc/loadavg; }

APT_PKGS=(runc containernetworking-plugins iptables ipset conntrack socat gcc libc6-dev)
ALL_STEPS=(apt pause busybox containerd kubelet kube-proxy coredns kube-router images)
STEPS=("$@"); [[ ${#STEPS[@]} -gt 0 ]] || STEPS=("${ALL_STEPS[@]}")

pinned() { awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$1/go.mod"; }
K8S_VERSION="$(pinned "$K8SMOD" k8s.io/kubernetes)"
CONTAINERD_VERSION="$(pinned "$NODEMODS/containerd" github.com/containerd/containerd/v2)"
COREDNS_VERSION="$(pinned "$NODEMODS/coredns" github.com/coredns/coredns)"
KUBE_ROUTER_VERSION="$(pinned "$NODEMODS/kube-router" github.com/cloudnativelabs/kube-router/v2)"

# inputs of each step (hashed into its stamp)
inputs() {
  local s="$1"
  # the script's own text matters for every step: the recipe
  cat "$HERE/build.sh"
  case "$s" in
    apt) printf '%s\n' "${APT_PKGS[@]}" ;;
    pause) cat "$HERE/pause.c" ;;
    busybox) echo busybox-static ;;
    containerd) cat "$NODEMODS/containerd/go.mod" "$NODEMODS/containerd/go.sum" ;;
    kubelet|kube-proxy) cat "$K8SMOD/go.mod" "$K8SMOD/go.sum" ;;
    coredns) cat "$NODEMODS/coredns/go.mod" "$NODEMODS/coredns/go.sum" "$NODEMODS/coredns/main.go" ;;
    kube-router) cat "$NODEMODS/kube-router/go.mod" "$NODEMODS/kube-router/go.sum" ;;
    images) cat "$HERE/oci-image.mjs"; sha256sum "$BIN/pause" "$BIN/busybox" "$BIN/coredns" 2>/dev/null || true ;;
  esac
  uname -sm
}
outputs() {
  case "$1" in
    apt) echo /usr/sbin/runc /usr/lib/cni/bridge /usr/sbin/ipset /usr/sbin/conntrack /usr/bin/socat /usr/sbin/iptables ;;
    pause) echo "$BIN/pause" ;;
    busybox) echo "$BIN/busybox" ;;
    containerd) echo "$BIN/containerd" "$BIN/containerd-shim-runc-v2" "$BIN/ctr" ;;
    kubelet) echo "$BIN/kubelet" ;;
    kube-proxy) echo "$BIN/kube-proxy" ;;
    coredns) echo "$BIN/coredns" ;;
    kube-router) echo "$BIN/kube-router" ;;
    images) echo "$IMAGES/pause.tar" "$IMAGES/busybox.tar" "$IMAGES/coredns.tar" ;;
  esac
}
stamp_of() { inputs "$1" | sha256sum | cut -c1-16; }
up_to_date() {
  local f
  [[ "${FORCE:-0}" != 1 && -f "$BIN/.stamp-$1" && "$(cat "$BIN/.stamp-$1")" == "$(stamp_of "$1")" ]] || return 1
  for f in $(outputs "$1"); do [[ -e "$f" ]] || return 1; done
}

mkdir -p "$BIN" "$IMAGES" "$DEBS"
exec 9>"$BIN/.lock"
if ! flock -n 9; then
  log "another node build is running; waiting for it ..."
  flock 9
  log "waited $(elapsed) for the other build"
fi

need_go() {
  command -v go >/dev/null 2>&1 && return 0
  log "ERROR: Go is not installed (or not on PATH): the node's binaries are built from the Go module proxy (Go >= 1.26)."
  exit 2
}
export CGO_ENABLED=0
GOFLAGS_NODE="-mod=readonly -trimpath -buildvcs=false -p=${GO_BUILD_PARALLELISM:-$(nproc 2>/dev/null || echo 2)}"

KMAJ="${K8S_VERSION#v}"; KMAJ="${KMAJ%%.*}"
KMIN="${K8S_VERSION#v*.}"; KMIN="${KMIN%%.*}"
k8s_ldflags() {
  local l="-s -w" pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    l+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=$KMAJ -X $pkg.gitMinor=$KMIN -X $pkg.gitTreeState=clean"
  done
  echo "$l"
}
gobuild() { # gobuild <module dir> <out> <ldflags> <tags> <package>
  need_go
  local tmp="$BIN/.tmp.$(basename "$2")"
  GOFLAGS="$GOFLAGS_NODE" nice -n 10 go build -C "$1" -tags "$4" -ldflags "$3" -o "$tmp" "$5"
  mv -f "$tmp" "$2"
}

do_apt() {
  if [[ "$(uname -s)" != Linux ]]; then log "ERROR: the real node needs Linux (this is $(uname -s))"; exit 3; fi
  local missing=() p
  for p in "${APT_PKGS[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p"); done
  if [[ ${#missing[@]} -gt 0 ]]; then
    [[ "$(id -u)" == 0 ]] || { log "ERROR: installing ${missing[*]} needs root (apt-get)"; exit 3; }
    log "apt-get install ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 ||
      { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; }
  fi
}
do_pause() {
  gcc -static -O2 -Wall -o "$BIN/.tmp.pause" "$HERE/pause.c" && strip "$BIN/.tmp.pause" && mv -f "$BIN/.tmp.pause" "$BIN/pause"
}
do_busybox() {
  # the static busybox of Debian, unpacked (not installed: the host keeps its own tools)
  rm -rf "$DEBS/busybox"; mkdir -p "$DEBS/busybox"
  (cd "$DEBS" && rm -f busybox-static_*.deb && apt-get download -q busybox-static >&2)
  dpkg-deb -x "$DEBS"/busybox-static_*.deb "$DEBS/busybox"
  cp "$DEBS/busybox/bin/busybox" "$BIN/busybox"
}
do_containerd() {
  local m="$NODEMODS/containerd" v="github.com/containerd/containerd/v2/version"
  local ld="-s -w -X $v.Version=$CONTAINERD_VERSION -X $v.Revision=proxy -X $v.Package=github.com/containerd/containerd/v2"
  local tags="no_btrfs no_devmapper no_zfs"
  gobuild "$m" "$BIN/containerd" "$ld" "$tags" github.com/containerd/containerd/v2/cmd/containerd
  gobuild "$m" "$BIN/containerd-shim-runc-v2" "$ld" "$tags" github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
  gobuild "$m" "$BIN/ctr" "$ld" "$tags" github.com/containerd/containerd/v2/cmd/ctr
}
do_kubelet() { gobuild "$K8SMOD" "$BIN/kubelet" "$(k8s_ldflags)" "" k8s.io/kubernetes/cmd/kubelet; }
do_kube-proxy() { gobuild "$K8SMOD" "$BIN/kube-proxy" "$(k8s_ldflags)" "" k8s.io/kubernetes/cmd/kube-proxy; }
do_coredns() {
  gobuild "$NODEMODS/coredns" "$BIN/coredns" "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION" "" .
}
do_kube-router() {
  gobuild "$NODEMODS/kube-router" "$BIN/kube-router" "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$KUBE_ROUTER_VERSION" "" \
    github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
}
do_images() {
  node "$HERE/oci-image.mjs" pause "registry.k8s.io/pause:capsule-local" "$IMAGES/pause.tar" "$BIN/pause:/pause" -- /pause
  node "$HERE/oci-image.mjs" busybox "docker.io/library/busybox:capsule-local" "$IMAGES/busybox.tar" "$BIN/busybox:/bin/busybox" --busybox -- /bin/sh
  node "$HERE/oci-image.mjs" coredns "registry.k8s.io/coredns/coredns:capsule-local" "$IMAGES/coredns.tar" "$BIN/coredns:/coredns" -- /coredns
}

log "steps: ${STEPS[*]}  (kubernetes $K8S_VERSION, containerd $CONTAINERD_VERSION, coredns $COREDNS_VERSION, kube-router $KUBE_ROUTER_VERSION)"
local s t0
for s in "${STEPS[@]}"; do
  case " ${ALL_STEPS[*]} " in *" $s "*) ;; *) log "unknown step '$s' (steps: ${ALL_STEPS[*]})"; exit 1 ;; esac
  if up_to_date "$s"; then log "$s: up to date"; continue; fi
  t0=$(date +%s)
  log "$s: building ... (load $(load))"
  "do_$s"
  stamp_of "$s" >"$BIN/.stamp-$s"
  log "$s: done in $(( $(date +%s) - t0 ))s (load $(load); total $(elapsed))"
done
log "all done in $(elapsed): $BIN"
}

main "$@"
