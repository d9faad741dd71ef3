#!/usr/bin/env bash
# Builds the OCI test harness's two binaries from the Go module proxy (no Docker):
#   registry   github.com/distribution/distribution/v3/cmd/registry   (CNCF distribution)
#   oras       oras.land/oras/cmd/oras                                (pushes Wasm OCI artifacts)
# pinned in test/oci/go/go.mod, into <repo>/.cache/oci/bin (override with OCI_BIN_DIR).
#
# Idempotent: a stamp of go.mod/go.sum/this script is written after a successful build; when it
# matches and both binaries exist, nothing is done (test/support/go-tools.sh: stamp, lock, timing).
# Exit codes: 0 ok, 2 Go missing, other = build error.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=../support/go-tools.sh
source "$ROOT/test/support/go-tools.sh"
build_one() { # TMP TOOL
  local pkg
  case "$2" in
    registry) pkg=github.com/distribution/distribution/v3/cmd/registry ;;
    oras) pkg=oras.land/oras/cmd/oras ;;
  esac
  CGO_ENABLED=0 GOFLAGS="-mod=readonly -trimpath -buildvcs=false" nice -n 10 go build -C "$HERE/go" -ldflags "-s -w" -o "$1/$2" "$pkg"
}
go_tools_build oci-build "${OCI_BIN_DIR:-$ROOT/.cache/oci/bin}" oci \
  "$(cat "$HERE/build.sh" "$HERE/go/go.mod" "$HERE/go/go.sum" | sha256sum | cut -c1-16) os=$(uname -s)-$(uname -m)" \
  build_one registry oras
