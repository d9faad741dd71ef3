#!/usr/bin/env bash
# Builds Prometheus's two binaries from the Go module proxy, for the chart's alert and dashboard
# tests (test/prometheus/, test/realnode/prometheus.test.ts):
#   promtool     github.com/prometheus/prometheus/cmd/promtool    (check rules, test rules, query)
#   prometheus   github.com/prometheus/prometheus/cmd/prometheus  (a real server scraping /metrics)
# at PROMETHEUS_VERSION, into <repo>/.cache/prometheus/bin (override with PROMETHEUS_BIN_DIR).
# `go install module@version` resolves the dependencies from Prometheus's own go.mod, so the build
# is pinned by the version alone. A module build has no web UI assets; the HTTP API the tests use
# is unaffected.
#
# Idempotent: a stamp of this script is written after a successful build; when it matches and
# both binaries exist, nothing is done. Runs at nice 10 (the machine is shared) and prints the
# time of each step. Exit codes: 0 ok, 2 Go missing, other = build error.
set -euo pipefail
main() {
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="${PROMETHEUS_BIN_DIR:-$ROOT/.cache/prometheus/bin}"
VERSION=v0.316.0
START=$(date +%s)
log() { printf '[prometheus-build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
STAMP_WANT="$(sha256sum <"$HERE/build.sh" | cut -c1-16) $VERSION os=$(uname -s)-$(uname -m)"
up_to_date() { [[ -f "$BIN/.stamp" && "$(head -n1 "$BIN/.stamp")" == "$STAMP_WANT" && -x "$BIN/promtool" && -x "$BIN/prometheus" ]]; }
if [[ "${FORCE:-0}" != 1 ]] && up_to_date; then log "up to date in $BIN"; exit 0; fi
command -v go >/dev/null 2>&1 || { log "ERROR: Go (>= 1.26) is needed to build promtool and prometheus"; exit 2; }
mkdir -p "$BIN"
exec 9>"$BIN/.lock"
if command -v flock >/dev/null 2>&1; then
  flock -n 9 || { log "another build is running; waiting ..."; flock 9; }
  if [[ "${FORCE:-0}" != 1 ]] && up_to_date; then log "built by a concurrent run"; exit 0; fi
fi
export CGO_ENABLED=0
export GOFLAGS="-mod=mod -trimpath -buildvcs=false"
TMP="$(mktemp -d "$BIN/.build.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
step() { local name="$1" t0=$(date +%s); log "building $name ($VERSION) ..."
  ( cd "$TMP" && GOBIN="$TMP" nice -n 10 go install -ldflags "-s -w" "github.com/prometheus/prometheus/cmd/$name@$VERSION" )
  log "built $name in $(( $(date +%s) - t0 ))s (total $(( $(date +%s) - START ))s)"; }
step promtool
step prometheus
mv -f "$TMP/promtool" "$TMP/prometheus" "$BIN/"
{ echo "$STAMP_WANT"; echo "# built $(date -u +%Y-%m-%dT%H:%M:%SZ) with $(go version)"; } >"$BIN/.stamp"
log "done in $(( $(date +%s) - START ))s: $BIN/promtool $BIN/prometheus"
}
main "$@"
