//go:build !linux

// This file leaves vectored writes to net.Buffers where raw socket calls
// are not implemented.

package http1

import (
	"io"
	"net"
)

// rawVec is not implemented here (see writev_linux.go): rawFor never
// returns one.
type rawVec struct{}

func (v *vecWriter) rawFor(net.Conn, io.Writer) *rawVec { return nil }

func (*rawVec) writev(a, b []byte) (int64, error) { panic("unreachable") }

// rawWritev says vectored writes are raw calls here.
const rawWritev = false
