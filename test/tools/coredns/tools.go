//go:build tools

// Package tools pins the command built from this module; see ../tools.go.
package tools

import (
	_ "github.com/coredns/coredns"
)
