//go:build linux

// This file makes vectored writes with raw system calls, on Linux.

package http1

import (
	"io"
	"net"
	"syscall"
	"unsafe"
)

// rawVec makes writev calls on a socket as rawIO makes its writes: raw
// calls on the non-blocking descriptor inside RawConn.Write, which waits
// in the netpoller, under the connection's deadline, when the socket
// buffer is full. The call is bound once (fn), and its arguments and
// results pass through the fields, so a write allocates nothing.
type rawVec struct {
	rc   syscall.RawConn
	fn   func(fd uintptr) bool
	a, b []byte
	n    int
	err  syscall.Errno
	iov  [2]syscall.Iovec
}

// rawFor returns the raw writer of a connection whose writes are raw
// (w is its rawIO), made on first use; nil for any other.
func (v *vecWriter) rawFor(nc net.Conn, w io.Writer) *rawVec {
	if v.raw != nil {
		return v.raw
	}
	if _, ok := w.(*rawIO); !ok {
		return nil
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	r := &rawVec{rc: rc}
	r.fn = r.write
	v.raw = r
	return r
}

func (r *rawVec) writev(a, b []byte) (int64, error) {
	r.a, r.b, r.n, r.err = a, b, 0, 0
	err := r.rc.Write(r.fn)
	n := r.n
	r.a, r.b, r.iov = nil, nil, [2]syscall.Iovec{}
	if err != nil {
		return int64(n), err
	}
	if r.err != 0 {
		return int64(n), r.err
	}
	return int64(n), nil
}

func (r *rawVec) write(fd uintptr) bool {
	for total := len(r.a) + len(r.b); r.n < total; {
		cnt := 1
		if r.n < len(r.a) {
			setIovec(&r.iov[0], r.a[r.n:])
			if len(r.b) > 0 {
				setIovec(&r.iov[1], r.b)
				cnt = 2
			}
		} else {
			setIovec(&r.iov[0], r.b[r.n-len(r.a):])
		}
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&r.iov[0])), uintptr(cnt))
		if e == syscall.EAGAIN {
			return false // the socket buffer is full: wait, then go on
		}
		if e != 0 {
			r.err = e
			return true
		}
		r.n += int(n)
	}
	return true
}

func setIovec(v *syscall.Iovec, p []byte) {
	v.Base = &p[0]
	v.SetLen(len(p))
}

// rawWritev says vectored writes are raw calls here.
const rawWritev = true
