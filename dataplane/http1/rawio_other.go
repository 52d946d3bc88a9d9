//go:build !linux

package http1

import (
	"io"
	"net"
)

// newRawIO is the connection itself where raw socket calls are not
// implemented (see rawio.go).
func newRawIO(nc net.Conn) io.ReadWriter { return nc }
