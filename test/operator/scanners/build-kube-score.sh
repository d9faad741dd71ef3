#!/usr/bin/env bash
# Builds kube-score (github.com/zegl/kube-score, a static checker of Kubernetes objects) from the
# Go module proxy into <repo>/.cache/scanners/bin (override with SCANNERS_DIR), for
# test/operator/scanners.test.ts and .ci/run. No Docker, no prebuilt binary download.
#
# Idempotent: a stamp of the version and this script is written after a successful build; when it
# matches and the binary exists, nothing is done (test/support/go-tools.sh: stamp, lock, timing).
# Exit codes: 0 ok, 2 Go missing, other = build error.
set -euo pipefail
VERSION=v1.20.0
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
# shellcheck source=../../support/go-tools.sh
source "$ROOT/test/support/go-tools.sh"
# `go install pkg@version` builds outside any module: -mod=mod lets it resolve kube-score's own go.mod.
build_one() { # TMP TOOL
  CGO_ENABLED=0 GOFLAGS="-mod=mod -trimpath -buildvcs=false" GOBIN="$1" nice -n 10 \
    go install -ldflags "-s -w" "github.com/zegl/kube-score/cmd/kube-score@$VERSION"
}
go_tools_build kube-score-build "${SCANNERS_DIR:-$ROOT/.cache/scanners}/bin" kube-score \
  "$(sha256sum <"$HERE/build-kube-score.sh" | cut -c1-16) $VERSION os=$(uname -s)-$(uname -m)" \
  build_one kube-score
