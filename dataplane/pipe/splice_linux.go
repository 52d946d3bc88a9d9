// This file implements a direction's copy through the kernel on Linux: splice(2) from the source socket into a kernel pipe, then from the pipe into the destination socket, one chunk at a time.

//go:build linux

package pipe

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// pipeSize is the capacity each kernel pipe asks for (F_SETPIPE_SZ), and
// so the most one chunk moves. On loopback, 1 MiB writes went through a
// pipe at 0.9 GB/s with the kernel's default 64 KiB, 2.5 GB/s with 256
// KiB, and no faster with 1 MiB (BenchmarkPipe, one CPU).
//
// A pipe's capacity counts against its user's pipe-user-pages-soft quota
// (64 MiB by default; 256 such pipes), past which the kernel refuses a
// larger capacity: the direction then copies through a buffer, never
// through a pipe too small to be worth it.
const pipeSize = 256 << 10

// maxIdlePipes bounds the kernel pipes kept between chunks for the next
// one to take (two file descriptors each, and an eighth of the quota in
// all); one more is closed instead.
const maxIdlePipes = 32

// kpipe is a kernel pipe: r its read end, w its write end, both
// non-blocking.
type kpipe struct{ r, w int }

var idlePipes = make(chan *kpipe, maxIdlePipes)

// errNoPipe says no kernel pipe of pipeSize could be made (the process
// is out of file descriptors, or its user past the quota): the direction
// copies through a buffer instead.
var errNoPipe = errors.New("no kernel pipe")

// takePipe returns a kernel pipe, empty, from the idle ones or new.
func takePipe() (*kpipe, error) {
	select {
	case k := <-idlePipes:
		return k, nil
	default:
	}
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		return nil, errNoPipe
	}
	k := &kpipe{r: fds[0], w: fds[1]}
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(k.r), syscall.F_SETPIPE_SZ, pipeSize); errno != 0 {
		k.close() // past the quota: EPERM
		return nil, errNoPipe
	}
	return k, nil
}

// give returns an empty kernel pipe for reuse, or closes it.
func (k *kpipe) give() {
	select {
	case idlePipes <- k:
	default:
		k.close()
	}
}

func (k *kpipe) close() {
	syscall.Close(k.r)
	syscall.Close(k.w)
}

// rawSocket returns c's raw connection when the kernel can splice it and
// nothing sits above its file descriptor: a TCP or Unix stream socket as
// the net package made it. Any other conn (TLS, a wrapper that may hold
// bytes it has read) is copied through a buffer.
func rawSocket(c net.Conn) syscall.RawConn {
	var rc syscall.RawConn
	var err error
	switch c := c.(type) {
	case *net.TCPConn:
		rc, err = c.SyscallConn()
	case *net.UnixConn:
		rc, err = c.SyscallConn()
	default:
		return nil
	}
	if err != nil {
		return nil
	}
	return rc
}

// kernelPath is a pipe's path through the kernel: its two sockets and a
// splicer for each direction, made once per pipe.
type kernelPath struct {
	raw [2]syscall.RawConn // client, backend
	dir [2]splicer
}

// splicer is one direction's state on the kernel path. Its step is the
// one callback the raw connections run, bound once per direction, so a
// chunk allocates nothing.
type splicer struct {
	p     *pipe
	d     int
	step  func(fd uintptr) bool // s.step, bound
	k     *kpipe                // held from the chunk's drain to the end of its pump
	inK   int                   // bytes in k
	pump  bool                  // step pumps k into the destination, else drains the source into k
	err   error                 // the failed splice(2)'s, or errNoPipe
	moved bool                  // a chunk has been drained
}

// newKernelPath returns p's kernel path, or nil when either conn is not
// a socket the kernel can splice (rawSocket).
func newKernelPath(p *pipe) *kernelPath {
	c, b := rawSocket(p.conns[0]), rawSocket(p.conns[1])
	if c == nil || b == nil {
		return nil
	}
	kp := &kernelPath{raw: [2]syscall.RawConn{c, b}}
	for d := range kp.dir {
		s := &kp.dir[d]
		s.p, s.d, s.step = p, d, s.stepOn
	}
	return kp
}

// copy moves direction d's bytes through the kernel until its source
// ends or fails or the pipe closes, and reports true; or reports false,
// with every byte drained so far written and the chunk at hand not
// begun, when the kernel cannot splice these sockets or no kernel pipe
// can be made, for the caller to copy the rest through a buffer.
//
// Each chunk is noted like a buffered copy's (the package doc: idle
// tracking): the time it was drained, and its pump as a write in
// progress, so the idle and stalled-write bounds hold as they do there.
// A direction waiting for its source holds no kernel pipe.
func (kp *kernelPath) copy(d int) bool {
	src, dst, s, p := kp.raw[d], kp.raw[1-d], &kp.dir[d], kp.dir[d].p
	defer s.release()
	for {
		s.pump = false
		if err := src.Read(s.step); err != nil {
			p.fail(side(d, true), err)
			return true
		}
		switch {
		case s.err == errNoPipe || s.err == syscall.EINVAL && !s.moved:
			return false
		case s.err != nil:
			p.fail(side(d, true), os.NewSyscallError("splice", s.err))
			return true
		case s.inK == 0:
			p.ended(d, p.conns[1-d])
			return true
		}
		s.moved = true
		p.writeStarts(d)
		s.pump = true
		err := dst.Write(s.step)
		p.writeEnds(d, true) // a failed pump ends the pipe either way
		if err == nil && s.err != nil {
			err = os.NewSyscallError("splice", s.err)
		}
		if err != nil {
			p.fail(side(d, false), err)
			return true
		}
	}
}

// stepOn is the raw connections' callback: it drains the source into the
// kernel pipe, or pumps the pipe into the destination, and reports false
// to wait for the socket to be ready.
func (s *splicer) stepOn(fd uintptr) bool {
	if s.pump {
		return s.pumpTo(int(fd))
	}
	return s.drainFrom(int(fd))
}

// drainFrom splices what the source socket holds, up to the pipe's
// capacity, into an empty kernel pipe. It leaves inK at 0 with no error
// at the end of the stream.
func (s *splicer) drainFrom(fd int) bool {
	if s.k == nil {
		k, err := takePipe()
		if err != nil {
			s.err = err
			return true
		}
		s.k = k
	}
	for {
		n, err := syscall.Splice(fd, nil, s.k.w, nil, pipeSize, spliceNonblock)
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			s.k.give() // a direction waiting for bytes holds no pipe
			s.k = nil
			return false
		}
		s.inK, s.err = int(n), err
		return true
	}
}

// pumpTo splices the kernel pipe's bytes into the destination socket,
// counting them, until the pipe is empty. A part written is progress: the
// write in progress starts again from it, so a slow reader that keeps
// reading is never taken for a stalled one, however large the chunk.
func (s *splicer) pumpTo(fd int) bool {
	for s.inK > 0 {
		n, err := syscall.Splice(s.k.r, nil, fd, nil, s.inK, spliceNonblock)
		if n > 0 {
			s.inK -= int(n)
			s.p.n[s.d] += n
			if s.inK > 0 {
				s.p.writeStarts(s.d)
			}
			continue
		}
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		case nil: // the pipe held fewer bytes than counted: never, but no loop
			err = syscall.EIO
		}
		s.err = err
		return true
	}
	return true
}

// release gives back the direction's kernel pipe: for reuse when empty,
// closed when a failed pump left bytes in it.
func (s *splicer) release() {
	if s.k == nil {
		return
	}
	if s.inK > 0 {
		s.k.close()
	} else {
		s.k.give()
	}
	s.k = nil
}

// spliceNonblock is SPLICE_F_NONBLOCK: a splice(2) never waits on the
// kernel pipe (the sockets are non-blocking already).
const spliceNonblock = 0x2
