// This file implements the tests of the kernel path's own rules: which conns take it, kernel pipes held only while bytes move, and the buffer when no kernel pipe can be made.

//go:build linux

package pipe

import (
	"context"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestKernelPathOnlyForBareSockets(t *testing.T) {
	a, b := tcpPair(t)
	defer a.Close()
	defer b.Close()
	wa, wb := bufferOnly(a, b)
	for _, c := range []struct {
		name   string
		c, b   net.Conn
		kernel bool
	}{
		{"two TCP sockets", a, b, true},
		{"a wrapped client", wa, b, false},
		{"a wrapped backend", a, wb, false},
	} {
		p := &pipe{conns: [2]net.Conn{c.c, c.b}}
		if got := newKernelPath(p) != nil; got != c.kernel {
			t.Errorf("%s: kernel path %v; want %v", c.name, got, c.kernel)
		}
	}
}

// kernelPipes counts the process's open file descriptors that are pipes.
func kernelPipes(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "pipe:") {
			n++
		}
	}
	return n
}

// moveBothWays sends 100 KiB each way through r's pipe, one way after
// the other, and reads them at the other end.
func moveBothWays(t *testing.T, r *rig) {
	t.Helper()
	for _, dir := range [][2]*net.TCPConn{{r.client, r.backend}, {r.backend, r.client}} {
		if _, err := dir[0].Write(make([]byte, 100<<10)); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(dir[1], make([]byte, 100<<10)); err != nil {
			t.Fatal(err)
		}
	}
}

// Pipes that have moved bytes both ways and now wait hold no kernel
// pipe: only the idle ones kept for reuse stay open, however many pipes
// wait.
func TestWaitingPipesHoldNoKernelPipe(t *testing.T) {
	const pipes = 2 * maxIdlePipes
	before := kernelPipes(t)
	for range pipes {
		r := start(t, Options{Idle: time.Minute})
		moveBothWays(t, r)
	}
	// Each direction gives its kernel pipe back when its next read finds
	// nothing, just after its last bytes are written.
	limit, open := time.Now().Add(5*time.Second), 0
	for {
		open = kernelPipes(t) - before
		if open <= 2*maxIdlePipes || time.Now().After(limit) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if open > 2*maxIdlePipes {
		t.Errorf("%d pipe descriptors open with %d pipes waiting; want at most %d (the idle kernel pipes kept)", open, pipes, 2*maxIdlePipes)
	}
}

// With no file descriptor to spare for a kernel pipe, the pipe copies
// through its buffer, and every byte arrives.
func TestNoKernelPipeCopiesThroughBuffer(t *testing.T) {
	for {
		select {
		case k := <-idlePipes:
			k.close()
			continue
		default:
		}
		break
	}
	cp, cc := tcpPair(t)
	bc, bp := tcpPair(t)
	defer cp.Close()
	defer bp.Close()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	var was syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &was); err != nil {
		t.Fatal(err)
	}
	// ReadDir's own descriptor is closed again: no descriptor is free.
	low := was
	low.Cur = uint64(len(ents) - 1)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skipf("cannot lower RLIMIT_NOFILE: %v", err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &was)
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != syscall.EMFILE {
		if err == nil {
			syscall.Close(fds[0])
			syscall.Close(fds[1])
		}
		t.Fatalf("a pipe with the limit lowered: %v; want EMFILE", err)
	}

	const n = 8 << 20
	done := make(chan Result, 1)
	go func() { done <- Run(context.Background(), cc, bc, Options{Idle: 5 * time.Second}) }()
	sentc := send(cp, n)
	sum, got, err := drain(bp)
	s := <-sentc
	if s.err != nil || err != nil || got != n || sum != s.sum {
		t.Fatalf("sent %v, received %d bytes (%v), sha256 equal %v; want %d bytes, equal", s.err, got, err, sum == s.sum, n)
	}
	bp.CloseWrite()
	if res := <-done; res.ClientToBackend != n || res.End != ClientClosed {
		t.Errorf("Result %d bytes up, End %q; want %d, %q", res.ClientToBackend, res.End, n, ClientClosed)
	}
}

// A pipe on the kernel path that has moved bytes both ways and now waits
// holds no buffer: its heap is the pipe's own few kilobytes, where the
// buffer path holds two 32 KiB buffers for as long as the pipe lasts.
func TestWaitingPipeHoldsNoBuffer(t *testing.T) {
	const pipes, most = 500, 16 << 10
	// Twice: buffers in a sync.Pool outlive one collection, and one
	// taken from there would not show as growth.
	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rigs := make([]*rig, 0, pipes)
	for range pipes {
		r := start(t, Options{Idle: time.Minute})
		moveBothWays(t, r)
		rigs = append(rigs, r)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(rigs)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / pipes
	t.Logf("%d bytes of heap and %d of goroutine stacks per waiting pipe", per, (int64(after.StackInuse)-int64(before.StackInuse))/pipes)
	if per > most {
		t.Errorf("%d bytes of heap per waiting pipe (with its test's sockets); want at most %d", per, most)
	}
}

// A reader slower than a kernel pipe's chunk takes Idle to drain, but
// reading steadily, keeps the pipe: the pump's progress counts, not only
// its end. The backend's socket buffers are small from the start, so
// little of a chunk waits in them.
func TestSlowSteadyReaderKeepsPipe(t *testing.T) {
	const idle, total, step = 200 * time.Millisecond, 512 << 10, 8 << 10
	cp, cc := tcpPair(t)
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10) })
		return nil
	}}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bcc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	bpc, err := ln.Accept()
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	bc, bp := bcc.(*net.TCPConn), bpc.(*net.TCPConn)
	bc.SetWriteBuffer(16 << 10)
	defer cp.Close()
	defer bp.Close()
	done := make(chan Result, 1)
	go func() { done <- Run(context.Background(), cc, bc, Options{Idle: idle}) }()

	sentc := send(cp, total)
	buf := make([]byte, step)
	begin := time.Now()
	for got := 0; got < total; {
		n, err := io.ReadFull(bp, buf[:min(step, total-got)])
		got += n
		if err != nil {
			cp.Close()
			t.Fatalf("after %d of %d bytes in %v: %v (%+v)", got, total, time.Since(begin), err, <-done)
		}
		time.Sleep(idle / 10) // 8 KiB per 20 ms: a 256 KiB chunk takes about 600 ms
	}
	if s := <-sentc; s.err != nil {
		t.Fatal(s.err)
	}
	if d := time.Since(begin); d < 3*idle {
		t.Fatalf("read in %v: the reader was not slower than Idle", d)
	}
	bp.CloseWrite()
	if res := <-done; res.ClientToBackend != total {
		t.Errorf("%d bytes up; want %d", res.ClientToBackend, total)
	}
}
