// This file implements waiting for a source's bytes without a buffer, on
// Linux.

//go:build linux

package pipe

import (
	"crypto/tls"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// maxPlaintext is the most plaintext one TLS record carries (RFC 8446,
// section 5.1; RFC 5246, section 6.2.1), the most one read of a
// tls.Conn returns.
const maxPlaintext = 16 << 10

// waiter waits until a direction's source has bytes to read, or has
// ended, without a buffer: it looks at the socket under the source with
// a one-byte recvfrom(2) with MSG_PEEK and MSG_DONTWAIT, inside the
// socket's raw read, so bytes that came in before the look are seen by
// it and bytes that come after it end the wait (the poller's readiness is
// cleared before the look, not after).
//
// A socket shows every byte a plain source holds. A TLS source may hold
// whole records that came in with the one it returned last, which its
// socket no longer shows: held takes those first.
type waiter struct {
	tls *tls.Conn       // the source, when it is TLS over rc's socket
	rc  syscall.RawConn // the socket the source reads
	// full is the most one read of the source returns: a read as long as
	// that may have left bytes behind, and is not followed by a wait.
	full    int
	readyFn func(fd uintptr) bool // w.ready, bound once
	// buf is the direction's buffer, given back when the wait parks.
	buf    **[bufSize]byte
	err    syscall.Errno // the look's error, which the socket then no longer holds
	parked bool          // the wait parked: the poller has seen the socket readable since
	b      [1]byte
}

// init makes w a waiter for src, whose direction holds its buffer in
// buf, and reports whether src can be waited on: a TCP or unix socket as
// the net package makes it, or TLS over one whose handshake is done. Any
// other conn may hold bytes no look at a socket can see (a wrapper with a
// buffer of its own): its direction keeps its buffer.
func (w *waiter) init(src net.Conn, buf **[bufSize]byte) bool {
	sock, full := src, bufSize
	tc, isTLS := src.(*tls.Conn)
	if isTLS {
		// A handshake not yet done would run inside held, under a
		// deadline in the past, and fail for good.
		if !tc.ConnectionState().HandshakeComplete {
			return false
		}
		sock, full = tc.NetConn(), maxPlaintext
	}
	rc := rawSocket(sock)
	if rc == nil {
		return false
	}
	*w = waiter{tls: tc, rc: rc, full: full, buf: buf}
	w.readyFn = w.ready
	return true
}

// pastDeadline is a deadline that has passed.
var pastDeadline = time.Unix(1, 0)

// held reads into b what the source's TLS holds already, without
// waiting: 0 and nil when it holds nothing, or the source is not TLS. A
// read deadline in the past makes the read return what crypto/tls
// holds, or time out before it touches the socket; a timeout is not
// kept by crypto/tls (a part of a record read so far stays for the next
// read). The pipe sets no deadlines of its own (it closes the
// connections to end), so clearing this one clears nothing else.
func (w *waiter) held(b []byte) (int, error) {
	if w.tls == nil {
		return 0, nil
	}
	w.tls.SetReadDeadline(pastDeadline)
	n, err := w.tls.Read(b)
	w.tls.SetReadDeadline(time.Time{})
	if n == 0 && timedOut(err) {
		return 0, nil
	}
	return n, err
}

// wait returns once the socket has bytes or its end to read, or an error
// when the look at it failed (a reset) or the connection is closed.
func (w *waiter) wait() error {
	w.err, w.parked = 0, false
	if err := w.rc.Read(w.readyFn); err != nil {
		return err
	}
	if w.err != 0 {
		return os.NewSyscallError("recvfrom", w.err)
	}
	return nil
}

// ready looks at the socket: true when a read would not wait (bytes, or
// the end of the stream), or the look failed; else it gives the buffer
// back and parks. A failed look took the socket's pending error (a
// reset), which a read after it would not see: wait reports it. Called
// again after parking, it does not look again: the poller ends a read
// wait only for the socket's readiness (bytes, its end, an error), so a
// quiet connection costs the same system calls as a read that waited.
func (w *waiter) ready(fd uintptr) bool {
	if w.parked {
		return true
	}
	_, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&w.b[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0, syscall.EINTR:
		return true
	case syscall.EAGAIN:
		giveBack(w.buf)
		w.parked = true
		return false
	}
	w.err = e
	return true
}
