// This file implements the throughput benchmarks: the pipe, a direct
// loopback connection as the floor, and io.Copy's unbounded splice(2) to
// compare the kernel path with.

package pipe

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// benchOneWay writes b.N 1 MiB chunks to w while reading as many from r,
// and reports MB/s.
func benchOneWay(b *testing.B, w, r net.Conn) {
	chunk := make([]byte, 1<<20)
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	errc := make(chan error, 1)
	go func() {
		for i := 0; i < b.N; i++ {
			if _, err := w.Write(chunk); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	buf := make([]byte, 1<<20)
	for n := int64(b.N) << 20; n > 0; {
		m, err := r.Read(buf[:min(n, int64(len(buf)))])
		if err != nil {
			b.Fatal(err)
		}
		n -= int64(m)
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
}

// BenchmarkPipe: client to backend through Run, on each path (the
// kernel's between the two TCP sockets, and the buffer's).
func BenchmarkPipe(b *testing.B) {
	for _, path := range paths {
		b.Run("path="+path.name, func(b *testing.B) {
			cp, cc := tcpPair(b)
			bc, bp := tcpPair(b)
			c, bk := path.wrap(cc, bc)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan Result, 1)
			go func() { done <- Run(ctx, c, bk, Options{Idle: time.Minute}) }()
			benchOneWay(b, cp, bp)
			cancel()
			<-done
			cp.Close()
			bp.Close()
		})
	}
}

// BenchmarkDirect: one loopback connection, no relay: the floor.
func BenchmarkDirect(b *testing.B) {
	w, r := tcpPair(b)
	defer w.Close()
	defer r.Close()
	benchOneWay(b, w, r)
}

// BenchmarkSplice: the relay io.Copy makes between two *net.TCPConn,
// which splice(2) moves in the kernel on Linux in one call until the
// stream ends; it sees no chunk, so it could bound neither idleness nor
// a stalled write.
func BenchmarkSplice(b *testing.B) {
	cp, cc := tcpPair(b)
	bc, bp := tcpPair(b)
	defer cp.Close()
	defer bp.Close()
	go func() { io.Copy(bc, cc); bc.Close() }()
	benchOneWay(b, cp, bp)
	cc.Close()
}

// BenchmarkNoteActivity: what the pipe pays per chunk to track activity:
// two clock reads (after the read, after the write) and four atomic
// stores, in writeStarts and writeEnds.
func BenchmarkNoteActivity(b *testing.B) {
	p := &pipe{start: time.Now()}
	for b.Loop() {
		p.writeStarts(up)
		p.writeEnds(up, true)
	}
}

// BenchmarkDeadlines: what a deadline per read and per write would cost
// instead, the runtime timer updated twice per chunk.
func BenchmarkDeadlines(b *testing.B) {
	c, d := tcpPair(b)
	defer c.Close()
	defer d.Close()
	for b.Loop() {
		c.SetReadDeadline(time.Now().Add(time.Hour))
		c.SetWriteDeadline(time.Now().Add(time.Hour))
	}
}
