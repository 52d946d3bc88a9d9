//go:build linux

// This file reads and writes sockets with raw system calls, on Linux.

package http1

import (
	"io"
	"net"
	"syscall"
	"unsafe"
)

// rawIO reads and writes a socket with raw system calls, which the Go
// runtime does not announce to its scheduler.
//
// Why: a read or write made the usual way marks the goroutine's processor
// as "in a system call"; a loopback write is long enough (it runs the
// receiving side's TCP processing too) that the runtime's monitor thread
// often sees one in progress, takes the processor away and hands it to
// another thread, and keeps waking every 20 µs to look again. On a busy
// proxy that costs thread switches and monitor wake-ups on every request.
// Sockets here are non-blocking, so a raw call never blocks: when it would
// (EAGAIN), the netpoller waits as usual, deadlines included.
type rawIO struct {
	rc syscall.RawConn
	// The calls made inside rc.Read and rc.Write, bound once so a read or
	// write allocates nothing; their arguments and results pass through
	// these fields. Reads are serial and writes are serial (a bufio
	// reader and writer own them), but a read and a write may overlap.
	readFn, writeFn, sendReadFn func(fd uintptr) bool
	rbuf                        []byte
	rn                          int
	rerr                        syscall.Errno
	wbuf, wtail                 []byte // a write: wtail follows wbuf (writev)
	wn                          int
	werr                        syscall.Errno
	iov                         [2]syscall.Iovec

	// holding and held let a request go out with the first read of its
	// answer (see hold).
	holding bool
	held    []byte
	herr    syscall.Errno // the held request's write failed

	// inRead makes Read a raw read that never waits, inside a read the
	// server serves requests in (inread.go): fd is the socket's, and
	// drained says the last read emptied it.
	inRead, drained bool
	fd              uintptr
}

// newRawIO returns a rawIO for TCP and unix connections, else nc itself.
func newRawIO(nc net.Conn) io.ReadWriter {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nc
	}
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return nc
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nc
	}
	r := &rawIO{rc: rc}
	r.readFn, r.writeFn, r.sendReadFn = r.read, r.write, r.sendRead
	return r
}

// rawOf is rw as a rawIO, or nil.
func rawOf(rw io.ReadWriter) *rawIO {
	r, _ := rw.(*rawIO)
	return r
}

func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if r.inRead {
		return r.readNow(p)
	}
	r.rbuf, r.rn, r.rerr = p, 0, 0
	var err error
	if len(r.held) == 0 {
		err = r.rc.Read(r.readFn)
	} else {
		r.herr = 0
		err = r.rc.Read(r.sendReadFn)
		if err == nil && len(r.held) > 0 {
			// The request did not go out whole without waiting: the
			// rest goes the usual way, which waits for room, then the
			// answer is read the usual way too.
			return r.sendHeldThenRead(p)
		}
		r.held = nil
	}
	r.rbuf = nil
	switch {
	case err != nil:
		return 0, err
	case r.rerr != 0:
		return 0, r.rerr
	case r.rn == 0:
		return 0, io.EOF
	}
	return r.rn, nil
}

// readNow is Read inside the read (inread.go): one raw read, which fails
// with errWouldWait where it would wait. A stream socket's read returns
// all it holds up to len(p), so a shorter read emptied it.
func (r *rawIO) readNow(p []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, r.fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	switch {
	case e == syscall.EAGAIN:
		r.drained = true
		return 0, errWouldWait
	case e != 0:
		return 0, e
	case n == 0:
		return 0, io.EOF
	}
	r.drained = int(n) < len(p)
	return int(n), nil
}

func (r *rawIO) read(fd uintptr) bool {
	p := r.rbuf
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e == syscall.EAGAIN {
		return false // wait in the netpoller, then try again
	}
	r.rn, r.rerr = int(n), e
	return true
}

func (r *rawIO) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if r.holding && len(r.held) == 0 {
		r.held = p
		return len(p), nil
	}
	n, err := r.writev(p, nil)
	return int(n), err
}

// writev writes a then b, in one writev where it can (vecWriter, for a
// client connection's buffered bytes and the body piece that follows).
func (r *rawIO) writev(a, b []byte) (int64, error) {
	if len(r.held) > 0 {
		if err := r.sendHeld(); err != nil {
			return 0, err
		}
	}
	r.wbuf, r.wtail, r.wn, r.werr = a, b, 0, 0
	err := r.rc.Write(r.writeFn)
	n := int64(r.wn)
	r.wbuf, r.wtail, r.iov = nil, nil, [2]syscall.Iovec{}
	if err != nil {
		return n, err
	}
	if r.werr != 0 {
		return n, r.werr
	}
	return n, nil
}

// write writes what is left of wbuf and wtail: a write while only one of
// them has bytes left, else a writev of both.
func (r *rawIO) write(fd uintptr) bool {
	a, b := r.wbuf, r.wtail
	for r.wn < len(a)+len(b) {
		var n uintptr
		var e syscall.Errno
		switch {
		case r.wn >= len(a):
			p := b[r.wn-len(a):]
			n, _, e = syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		case len(b) == 0:
			p := a[r.wn:]
			n, _, e = syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		default:
			setIovec(&r.iov[0], a[r.wn:])
			setIovec(&r.iov[1], b)
			n, _, e = syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&r.iov[0])), 2)
		}
		if e == syscall.EAGAIN {
			return false // the socket buffer is full: wait, then go on
		}
		if e != 0 {
			r.werr = e
			return true
		}
		r.wn += int(n)
	}
	return true
}

func setIovec(v *syscall.Iovec, p []byte) {
	v.Base = &p[0]
	v.SetLen(len(p))
}

// rawWritev says vectored writes are raw calls here.
const rawWritev = true

// Sending a request with the first read of its answer. An upstream
// exchange writes a request, then reads the answer; made one after the
// other, the read comes a few microseconds after the write and nearly
// always finds nothing yet (EAGAIN), so it costs a system call before the
// netpoller waits. That read cannot simply be skipped: every rc.Read
// starts by clearing the descriptor's readiness, so an answer that came
// in before it would never be waited for. So the request is written
// inside the read instead: the clearing comes first, then the write, then
// the wait, and any answer to the request arrives after the clearing.
//
// hold(true) makes the next Write (bufio.Writer's Flush of a whole
// request) keep its bytes instead of writing them; the next Read writes
// them as its first step and then waits for the answer. The bytes are
// the bufio.Writer's own buffer, which holds still until the Writer is
// written to again: Conn writes nothing to it before it reads the answer
// (Conn.flushRequest), and a connection whose held request never went
// out is closed, not pooled (Pool.put). A write that would block (a full
// socket buffer), or fails, ends the read at once: the rest goes through
// Write, which waits for room with the write deadline, and the answer is
// read as usual. A read deadline already past ends the read before
// anything is written; the exchange then fails as it would have.

// hold turns the keeping of the next Write on or off.
func (r *rawIO) hold(on bool) { r.holding = on }

// pendingWrite reports whether a held request has not gone out.
func (r *rawIO) pendingWrite() bool { return len(r.held) > 0 }

// sendHeld writes a held request now, waiting for room if it must.
func (r *rawIO) sendHeld() error {
	held := r.held
	r.held = nil
	r.holding = false
	_, err := r.Write(held)
	return err
}

// sendHeldThenRead finishes a held request's write that would have
// blocked, then reads into p.
func (r *rawIO) sendHeldThenRead(p []byte) (int, error) {
	r.rbuf = nil
	if r.herr != 0 {
		r.held = nil
		return 0, r.herr
	}
	if err := r.sendHeld(); err != nil {
		return 0, err
	}
	return r.Read(p)
}

// sendRead writes the held request on its first call and then asks to
// wait (false), without a read; once the request is out, it reads.
func (r *rawIO) sendRead(fd uintptr) bool {
	for len(r.held) > 0 {
		p := r.held
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e == syscall.EAGAIN {
			return true // the rest waits for room: sendHeldThenRead
		}
		if e != 0 {
			r.herr = e
			return true
		}
		r.held = p[n:]
		if len(r.held) == 0 {
			return false // sent: wait for the answer
		}
	}
	return r.read(fd)
}

// peekQuiet reports whether a socket has nothing to read and has not been
// closed by the peer, without reading or waiting: one recvfrom with
// MSG_PEEK and MSG_DONTWAIT, made as a raw call on the descriptor itself.
// Not through rc.Read: that would also take the descriptor's read lock
// and fail on a read deadline left from the last exchange, which means
// nothing to an idle connection. Only the connection's sole user may
// check it (Get, or the sweep under the pool's lock), so the descriptor
// cannot be closed meanwhile.
type peekQuiet struct {
	fd uintptr
	b  [1]byte
}

func newPeekQuiet(rc syscall.RawConn) *peekQuiet {
	p := &peekQuiet{}
	if rc.Control(func(fd uintptr) { p.fd = fd }) != nil {
		return nil
	}
	return p
}

func (p *peekQuiet) check() bool {
	_, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, p.fd, uintptr(unsafe.Pointer(&p.b[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	// EAGAIN: nothing buffered and the stream is open. A byte, or zero
	// bytes read (the peer's FIN), or an error (a reset) all end here.
	return e == syscall.EAGAIN
}

// recvPeekLeft reports whether the peer closed or reset the stream, from
// one recvfrom with MSG_PEEK and MSG_DONTWAIT: zero bytes is the peer's
// FIN, an error other than EAGAIN a reset. A byte means it is still there.
func recvPeekLeft(fd uintptr, b []byte) bool {
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return e != syscall.EAGAIN
	}
	return n == 0
}
