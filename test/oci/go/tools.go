//go:build tools

// Package tools pins the two binaries of the OCI test harness: the CNCF distribution registry and
// the oras CLI (built by test/oci/build.sh from the Go module proxy).
package tools

import (
	_ "github.com/distribution/distribution/v3/cmd/registry"
	_ "oras.land/oras/cmd/oras"
)
