// This file implements the vectored write of what a client connection's
// writer holds together with the piece of body that follows it.

package http1

import (
	"io"
	"net"
)

// vecWriter writes two byte slices to a client connection in one system
// call where it can: writev, made as a raw call where the connection's
// writes are raw (rawIO, Linux), else through net.Buffers, which is a
// writev on a TCP or unix connection and a write of each slice on
// anything else. Like a write through rawIO, a raw writev that would
// block waits in the netpoller, so the connection's deadline still holds.
// Its fields are reused from one write to the next so that a write
// allocates nothing; the raw writer is made on a connection's first
// vectored write.
type vecWriter struct {
	bufs net.Buffers
	iov  [2][]byte
	raw  *rawVec
}

// write writes a then b to w, which writes to nc, and reports how much of
// each went.
func (v *vecWriter) write(nc net.Conn, w io.Writer, a, b []byte) (na, nb int, err error) {
	var n int64
	if raw := v.rawFor(nc, w); raw != nil {
		n, err = raw.writev(a, b)
	} else {
		v.iov = [2][]byte{a, b}
		v.bufs = v.iov[:]
		n, err = v.bufs.WriteTo(w)
		v.iov, v.bufs = [2][]byte{}, nil
	}
	na = int(min(n, int64(len(a))))
	return na, int(n) - na, err
}
