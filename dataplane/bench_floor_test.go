// This file implements the floor relay, the baseline that tracks nginx in
// BenchmarkProxy.

package dataplane

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
)

// The floor relay is the least an HTTP/1.1 proxy written in Go on net.Conn
// does for a GET: per client connection one goroutine reads a request
// head, adds X-Forwarded-For, writes it on a kept-alive backend
// connection, reads the answer's head and its Content-Length body, and
// writes the answer to the client in one write. It checks nothing, routes
// nothing and copies headers verbatim: it is no proxy anyone should run,
// but the system calls it makes per request are those nginx makes (a
// read and a write on each side) plus the netpoller's reads that find
// nothing yet, so its cost moves with the machine, the kernel and the Go
// runtime as nginx's does. make bench-check holds tunnelgate's proxy to a
// ratio of it (BENCHMARKS.md, proxy-vs-floor), where nginx itself cannot
// run in process; bench/load measures the proxy against nginx itself.
type floorRelay struct {
	backend string
	idle    chan *floorConn
}

// floorConn is a kept-alive backend connection of the floor relay.
type floorConn struct {
	nc net.Conn
	br *bufio.Reader
}

// serveFloor starts a floor relay in front of backend and returns its
// address.
func serveFloor(b testing.TB, backend string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	f := &floorRelay{backend: backend, idle: make(chan *floorConn, 64)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	b.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
		close(f.idle)
		for c := range f.idle {
			c.nc.Close()
		}
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				f.serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// serve relays the requests of one client connection until it fails.
func (f *floorRelay) serve(c net.Conn) {
	br := bufio.NewReaderSize(c, 4096)
	host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
	xff := []byte("X-Forwarded-For: " + host + "\r\n\r\n")
	var out []byte
	for {
		out = out[:0]
		for { // the request head, verbatim but for its blank line
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(line) <= 2 {
				break
			}
			out = append(out, line...)
		}
		out = append(out, xff...)
		up, err := f.get()
		if err != nil {
			return
		}
		if _, err := up.nc.Write(out); err != nil {
			up.nc.Close()
			return
		}
		out, err = readFloorAnswer(up.br, out[:0])
		if err != nil {
			up.nc.Close()
			return
		}
		f.idle <- up
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// get returns an idle backend connection, or dials one.
func (f *floorRelay) get() (*floorConn, error) {
	select {
	case c := <-f.idle:
		return c, nil
	default:
	}
	nc, err := net.Dial("tcp", f.backend)
	if err != nil {
		return nil, err
	}
	return &floorConn{nc: nc, br: bufio.NewReaderSize(nc, 8192)}, nil
}

// readFloorAnswer appends one answer, head and Content-Length body, to
// out.
func readFloorAnswer(br *bufio.Reader, out []byte) ([]byte, error) {
	n := -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		out = append(out, line...)
		if len(line) <= 2 {
			break
		}
		if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	if n < 0 {
		return nil, errors.New("floor relay: an answer without Content-Length")
	}
	start := len(out)
	out = append(out, make([]byte, n)...)
	_, err := io.ReadFull(br, out[start:])
	return out, err
}
