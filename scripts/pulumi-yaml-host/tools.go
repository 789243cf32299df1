//go:build tools

// Package tools pins the Pulumi YAML language host that scripts/ensure-pulumi-yaml
// builds from the Go module proxy (see README.md).
package tools

import (
	_ "github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml"
)
