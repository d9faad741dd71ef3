#!/usr/bin/env bash
# Builds kube-score (github.com/zegl/kube-score, a static checker of Kubernetes objects) from the
# Go module proxy into <repo>/.cache/scanners/bin (override with SCANNERS_DIR), for
# test/operator/scanners.test.ts and .ci/run. No Docker, no prebuilt binary download.
#
# Idempotent: a stamp of the version and this script is written after a successful build; when it
# matches and the binary exists, nothing is done. Runs at nice 10 (the machine is shared) and
# prints its time. Exit codes: 0 ok, 2 Go missing, other = build error.
set -euo pipefail
VERSION=v1.20.0
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
DIR="${SCANNERS_DIR:-$ROOT/.cache/scanners}"
BIN="$DIR/bin"
START=$(date +%s)
log() { printf '[kube-score-build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
STAMP_WANT="$(sha256sum "$HERE/build-kube-score.sh" | cut -c1-16) $VERSION os=$(uname -s)-$(uname -m)"
up_to_date() { [[ -f "$BIN/.kube-score.stamp" && "$(head -n1 "$BIN/.kube-score.stamp")" == "$STAMP_WANT" && -x "$BIN/kube-score" ]]; }
if [[ "${FORCE:-0}" != 1 ]] && up_to_date; then log "up to date in $BIN"; exit 0; fi
command -v go >/dev/null 2>&1 || { log "ERROR: Go is needed to build kube-score ($VERSION) from the Go module proxy"; exit 2; }
mkdir -p "$BIN"
exec 9>"$BIN/.kube-score.lock"
if command -v flock >/dev/null 2>&1; then
  flock -n 9 || { log "another build is running; waiting ..."; flock 9; }
  if [[ "${FORCE:-0}" != 1 ]] && up_to_date; then log "built by a concurrent run"; exit 0; fi
fi
TMP="$(mktemp -d "$BIN/.build.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
log "building kube-score $VERSION ..."
# `go install pkg@version` builds outside any module: -mod=mod lets it resolve kube-score's own go.mod.
CGO_ENABLED=0 GOFLAGS="-mod=mod -trimpath -buildvcs=false" GOBIN="$TMP" nice -n 10 \
  go install -ldflags "-s -w" "github.com/zegl/kube-score/cmd/kube-score@$VERSION"
mv -f "$TMP/kube-score" "$BIN/kube-score"
{ echo "$STAMP_WANT"; echo "# built $(date -u +%Y-%m-%dT%H:%M:%SZ) with $(go version)"; } >"$BIN/.kube-score.stamp"
log "done in $(( $(date +%s) - START ))s: $BIN/kube-score"
