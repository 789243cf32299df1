//go:build tools

// Package tools pins the Pulumi engine that scripts/ensure-pulumi builds from
// the Go module proxy. pkg/v3's own go.mod has replace directives, so
// `go install pkg/v3/cmd/pulumi@v` cannot work; this wrapper module requires
// the release instead and repeats the replace that matters (see go.mod).
package tools

import (
	_ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
)
