//go:build tools

// Package lint only names the tools this module pins.
package lint

import _ "honnef.co/go/tools/cmd/staticcheck"
