#!/usr/bin/env bash
# Builds Prometheus's two binaries from the Go module proxy, for the chart's alert and dashboard
# tests (test/prometheus/, test/realnode/prometheus.test.ts):
#   promtool     github.com/prometheus/prometheus/cmd/promtool    (check rules, test rules, query)
#   prometheus   github.com/prometheus/prometheus/cmd/prometheus  (a real server scraping /metrics)
# at VERSION, into <repo>/.cache/prometheus/bin (override with PROMETHEUS_BIN_DIR).
# `go install module@version` resolves the dependencies from Prometheus's own go.mod, so the build
# is pinned by the version alone. A module build has no web UI assets; the HTTP API the tests use
# is unaffected.
#
# Idempotent: a stamp of this script and the version is written after a successful build; when it
# matches and both binaries exist, nothing is done (test/support/go-tools.sh: stamp, lock, timing).
# Exit codes: 0 ok, 2 Go missing, other = build error.
set -euo pipefail
VERSION=v0.316.0
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=../support/go-tools.sh
source "$ROOT/test/support/go-tools.sh"
build_one() { # TMP TOOL
  ( cd "$1" && CGO_ENABLED=0 GOFLAGS="-mod=mod -trimpath -buildvcs=false" GOBIN="$1" nice -n 10 \
    go install -ldflags "-s -w" "github.com/prometheus/prometheus/cmd/$2@$VERSION" )
}
go_tools_build prometheus-build "${PROMETHEUS_BIN_DIR:-$ROOT/.cache/prometheus/bin}" prometheus \
  "$(sha256sum <"$HERE/build.sh" | cut -c1-16) $VERSION os=$(uname -s)-$(uname -m)" \
  build_one promtool prometheus
