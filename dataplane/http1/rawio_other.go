//go:build !linux

// This file uses the connection itself where raw socket calls are not
// implemented.

package http1

import (
	"io"
	"net"
	"syscall"
)

// newRawIO is the connection itself where raw socket calls are not
// implemented (see rawio.go).
func newRawIO(nc net.Conn) io.ReadWriter { return nc }

// rawIO is never made here: the server serves every request the usual
// way (inread.go).
type rawIO struct {
	rc              syscall.RawConn
	inRead, drained bool
	fd              uintptr
}

// rawOf is nil here.
func rawOf(io.ReadWriter) *rawIO { return nil }

// peekQuiet reports whether a socket has nothing to read and is still
// open (see rawio.go); elsewhere than Linux it asks recvfrom through
// package syscall where that exists (peek_unix.go).
type peekQuiet struct {
	rc syscall.RawConn
	b  [1]byte
}

func newPeekQuiet(rc syscall.RawConn) *peekQuiet { return &peekQuiet{rc: rc} }

func (p *peekQuiet) check() bool {
	quiet := false
	if err := p.rc.Control(func(fd uintptr) { quiet = recvPeekWouldBlock(fd, p.b[:]) }); err != nil {
		return false
	}
	return quiet
}

// rawWritev says vectored writes are raw calls here.
const rawWritev = false
