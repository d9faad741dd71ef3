#!/usr/bin/env bash
# Builds the binaries of the test cluster from the Go module proxy (no Docker, no dl.k8s.io):
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl  (test/cluster/go/k8s)
#   helm                                                                    (test/cluster/go/helm)
#   kwok                                                                    (test/cluster/go/kwok)
# into <repo>/.cache/cluster/bin (override with CLUSTER_BIN_DIR).
#
# Idempotent: the pinned versions and a hash of this script and of the wrapper modules' go.mod/go.sum
# are written to <bin>/.stamp after a successful build (so editing this script means a relink, ~1 min). When the stamp matches and every binary exists, the script
# does nothing and exits 0 (without even needing Go). FORCE=1 rebuilds anyway.
#
# Needs only Go (>= 1.26) and the module proxy. Exit codes: 0 ok, 2 Go missing, other = build error.
set -euo pipefail

# Everything is inside main() so bash parses the whole file before running it (safe against edits
# of this file during a long build).
main() {

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="${CLUSTER_BIN_DIR:-$ROOT/.cache/cluster/bin}"
GOMODS="$HERE/go"
START=$(date +%s)

log() { printf '[cluster-build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
elapsed() { local s=$(( $(date +%s) - START )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

# version of a module as pinned in a wrapper go.mod (no Go needed)
pinned() { awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$GOMODS/$1/go.mod"; }

K8S_VERSION="$(pinned k8s k8s.io/kubernetes)"
ETCD_VERSION="$(pinned k8s go.etcd.io/etcd/server/v3)"
HELM_VERSION="$(pinned helm helm.sh/helm/v4)"
KWOK_VERSION="$(pinned kwok sigs.k8s.io/kwok)"
for v in K8S_VERSION ETCD_VERSION HELM_VERSION KWOK_VERSION; do
  [[ -n "${!v}" ]] || { log "could not read $v from $GOMODS/*/go.mod"; exit 1; }
done

hash_inputs() {
  # the recipe (this script) and the exact dependency graphs
  cat "$HERE/build.sh" "$GOMODS"/k8s/go.mod "$GOMODS"/k8s/go.sum "$GOMODS"/helm/go.mod "$GOMODS"/helm/go.sum \
    "$GOMODS"/kwok/go.mod "$GOMODS"/kwok/go.sum | sha256sum | cut -c1-16
}
STAMP_WANT="kubernetes=$K8S_VERSION etcd=$ETCD_VERSION helm=$HELM_VERSION kwok=$KWOK_VERSION inputs=$(hash_inputs) os=$(uname -s)-$(uname -m)"
K8S_BINS=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)
ALL_BINS=("${K8S_BINS[@]}" helm kwok)

up_to_date() {
  [[ -f "$BIN/.stamp" ]] && [[ "$(head -n1 "$BIN/.stamp")" == "$STAMP_WANT" ]] || return 1
  local b
  for b in "${ALL_BINS[@]}"; do [[ -x "$BIN/$b" ]] || return 1; done
  [[ -f "$BIN/kwok-stages.yaml" ]] || return 1
}

if [[ "${FORCE:-0}" != 1 ]] && up_to_date; then
  log "up to date in $BIN ($STAMP_WANT)"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  log "ERROR: Go is not installed (or not on PATH). The test cluster is built from source with Go >= 1.26"
  log "       and the Go module proxy. Install Go, or set KUBECONFIG to use an existing cluster instead."
  exit 2
fi

mkdir -p "$BIN"
# Serialise concurrent builds (two test runs starting at once).
exec 9>"$BIN/.lock"
if command -v flock >/dev/null 2>&1; then
  if ! flock -n 9; then
    log "another build is running; waiting for it ..."
    flock 9
    log "waited $(elapsed) for the other build"
  fi
  if [[ "${FORCE:-0}" != 1 ]] && up_to_date; then log "built by a concurrent run; up to date"; exit 0; fi
fi
START=$(date +%s)

export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:-} -mod=readonly -trimpath -buildvcs=false -p=${GO_BUILD_PARALLELISM:-$(nproc 2>/dev/null || echo 2)}"
log "go: $(go version)   GOFLAGS=$GOFLAGS"
log "pinned: kubernetes $K8S_VERSION, etcd $ETCD_VERSION, helm $HELM_VERSION, kwok $KWOK_VERSION"

TMP="$(mktemp -d "$BIN/.build.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

step() { # step <name> <module dir> <ldflags> <package> [<package>...]
  local name="$1" mod="$2" ldflags="$3"; shift 3
  local t0=$(date +%s)
  log "building $name ..."
  go build -C "$GOMODS/$mod" -ldflags "$ldflags" -o "$TMP/$name" "$@"
  log "built $name in $(( $(date +%s) - t0 ))s (total $(elapsed))"
}

# go build downloads only the modules it needs (far less than `go mod download` of the whole graph).
KMAJ="${K8S_VERSION#v}"; KMAJ="${KMAJ%%.*}"
KMIN="${K8S_VERSION#v*.}"; KMIN="${KMIN%%.*}"
BUILD_DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
K8S_LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  K8S_LDFLAGS+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=$KMAJ -X $pkg.gitMinor=$KMIN"
  K8S_LDFLAGS+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$BUILD_DATE"
done

# etcd first: small, and it warms the cache with grpc/otel shared by the apiserver.
step etcd k8s "-s -w" go.etcd.io/etcd/server/v3
step kube-apiserver k8s "$K8S_LDFLAGS" k8s.io/kubernetes/cmd/kube-apiserver
step kube-controller-manager k8s "$K8S_LDFLAGS" k8s.io/kubernetes/cmd/kube-controller-manager
step kube-scheduler k8s "$K8S_LDFLAGS" k8s.io/kubernetes/cmd/kube-scheduler
step kubectl k8s "$K8S_LDFLAGS" k8s.io/kubernetes/cmd/kubectl
step helm helm "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION -X helm.sh/helm/v4/internal/version.gitTreeState=clean" helm.sh/helm/v4/cmd/helm
step kwok kwok "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${K8S_VERSION#v}" sigs.k8s.io/kwok/cmd/kwok

# kwok only simulates what its Stage objects describe; the binary has no built-in stages (kwokctl
# normally writes them). Take the upstream defaults (node-initialize, heartbeat-with-lease, pod
# ready/complete/delete) from the pinned module, so they always match the binary.
KWOK_DIR="$(go list -C "$GOMODS/kwok" -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
  pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
  echo "---"
  echo "# from sigs.k8s.io/kwok@$KWOK_VERSION kustomize/stage/$f"
  cat "$KWOK_DIR/kustomize/stage/$f"
done >"$TMP/kwok-stages.yaml"

for b in "${ALL_BINS[@]}" kwok-stages.yaml; do mv -f "$TMP/$b" "$BIN/$b"; done
{
  echo "$STAMP_WANT"
  echo "# built $(date -u +%Y-%m-%dT%H:%M:%SZ) with $(go version) in $(elapsed)"
} >"$BIN/.stamp"
log "done: ${ALL_BINS[*]} in $BIN"
log "total time $(elapsed)"
}

main "$@"
