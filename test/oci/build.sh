#!/usr/bin/env bash
# Builds the OCI test harness's two binaries from the Go module proxy (no Docker):
#   registry   github.com/distribution/distribution/v3/cmd/registry   (CNCF distribution)
#   oras       oras.land/oras/cmd/oras                                (pushes Wasm OCI artifacts)
# pinned in test/oci/go/go.mod, into <repo>/.cache/oci/bin (override with OCI_BIN_DIR).
#
# Idempotent: a stamp of go.mod/go.sum/this script is written after a successful build; when it
# matches and both binaries exist, nothing is done. Runs at nice 10 (the machine is shared) and
# prints the time of each step. Exit codes: 0 ok, 2 Go missing, other = build error.
set -euo pipefail
main() {
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="${OCI_BIN_DIR:-$ROOT/.cache/oci/bin}"
START=$(date +%s)
log() { printf '[oci-build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
STAMP_WANT="$(cat "$HERE/build.sh" "$HERE/go/go.mod" "$HERE/go/go.sum" | sha256sum | cut -c1-16) os=$(uname -s)-$(uname -m)"
up_to_date() { [[ -f "$BIN/.stamp" && "$(head -n1 "$BIN/.stamp")" == "$STAMP_WANT" && -x "$BIN/registry" && -x "$BIN/oras" ]]; }
if [[ "${FORCE:-0}" != 1 ]] && up_to_date; then log "up to date in $BIN"; exit 0; fi
command -v go >/dev/null 2>&1 || { log "ERROR: Go (>= 1.26) is needed to build the OCI test registry and oras"; exit 2; }
mkdir -p "$BIN"
exec 9>"$BIN/.lock"
if command -v flock >/dev/null 2>&1; then
  flock -n 9 || { log "another build is running; waiting ..."; flock 9; }
  if [[ "${FORCE:-0}" != 1 ]] && up_to_date; then log "built by a concurrent run"; exit 0; fi
fi
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly -trimpath -buildvcs=false"
TMP="$(mktemp -d "$BIN/.build.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
step() { local name="$1" pkg="$2" t0=$(date +%s); log "building $name ($pkg) ..."
  nice -n 10 go build -C "$HERE/go" -ldflags "-s -w" -o "$TMP/$name" "$pkg"
  log "built $name in $(( $(date +%s) - t0 ))s (total $(( $(date +%s) - START ))s)"; }
step registry github.com/distribution/distribution/v3/cmd/registry
step oras oras.land/oras/cmd/oras
mv -f "$TMP/registry" "$TMP/oras" "$BIN/"
{ echo "$STAMP_WANT"; echo "# built $(date -u +%Y-%m-%dT%H:%M:%SZ) with $(go version)"; } >"$BIN/.stamp"
log "done in $(( $(date +%s) - START ))s: $BIN/registry $BIN/oras"
}
main "$@"
