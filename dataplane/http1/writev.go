// This file implements the vectored write of what a client connection's
// writer holds together with the piece of body that follows it.

package http1

import (
	"io"
	"net"
)

// vecWriter writes two byte slices to a client connection in one system
// call where it can: the connection's own writev where its writes are
// raw (rawIO, Linux: a writev that would block waits in the netpoller, so
// the connection's deadline still holds), else through net.Buffers,
// which is a writev on a TCP or unix connection and a write of each slice
// on anything else. Its fields are reused from one write to the next so
// that a write allocates nothing.
type vecWriter struct {
	bufs net.Buffers
	iov  [2][]byte
}

// vectored is a writer that makes its own vectored writes (rawIO).
type vectored interface {
	writev(a, b []byte) (int64, error)
}

// write writes a then b to w, and reports how much of each went.
func (v *vecWriter) write(w io.Writer, a, b []byte) (na, nb int, err error) {
	var n int64
	if vw, ok := w.(vectored); ok {
		n, err = vw.writev(a, b)
	} else {
		v.iov = [2][]byte{a, b}
		v.bufs = v.iov[:]
		n, err = v.bufs.WriteTo(w)
		v.iov, v.bufs = [2][]byte{}, nil
	}
	na = int(min(n, int64(len(a))))
	return na, int(n) - na, err
}
