// Package floorrelay is the least an HTTP/1.1 proxy written in Go on
// net.Conn does for a GET, a baseline for the proxy's benchmarks.
//
// Per client connection one goroutine reads a request head, adds
// X-Forwarded-For, writes it on a kept-alive backend connection, reads
// the answer's head and its Content-Length body, and writes the answer to
// the client in one write. It checks nothing, routes nothing and copies
// headers verbatim: no one should run it as a proxy. But the system calls
// it makes per request are those nginx makes (a read and a write on each
// side) plus the Go netpoller's reads that find nothing yet, so its cost
// moves with the machine, the kernel and the Go runtime as nginx's does:
// the in-process benchmark holds tunnelgate's proxy to a ratio of it
// (dataplane's BenchmarkProxy, impl=floor), where nginx cannot run in
// process, and the load benchmark (bench/load, target floor, which runs
// the command in floor/) measures it beside nginx, which shows what of
// the proxy's cost over nginx's is the Go runtime's and what is the
// proxy's own.
package floorrelay

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
)

// Relay relays the requests of the connections it serves to one backend.
type Relay struct {
	backend string
	idle    chan *backendConn

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// backendConn is a kept-alive backend connection.
type backendConn struct {
	nc net.Conn
	br *bufio.Reader
}

// New returns a relay to backend (host:port).
func New(backend string) *Relay {
	return &Relay{backend: backend, idle: make(chan *backendConn, 256), conns: map[net.Conn]struct{}{}}
}

// Serve accepts connections on ln and relays each in a goroutine of its
// own, until ln fails (is closed).
func (r *Relay) Serve(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.conns[c] = struct{}{}
		r.mu.Unlock()
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer func() {
				r.mu.Lock()
				delete(r.conns, c)
				r.mu.Unlock()
				c.Close()
			}()
			r.serve(c)
		}()
	}
}

// Close closes the client connections being served, waits for their
// goroutines, and closes the idle backend connections. The listener is
// the caller's to close, first.
func (r *Relay) Close() {
	r.mu.Lock()
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	for {
		select {
		case b := <-r.idle:
			b.nc.Close()
		default:
			return
		}
	}
}

// serve relays the requests of one client connection until it fails.
func (r *Relay) serve(c net.Conn) {
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
		up, err := r.get()
		if err != nil {
			return
		}
		if _, err := up.nc.Write(out); err != nil {
			up.nc.Close()
			return
		}
		var keep bool
		out, keep, err = readAnswer(up.br, out[:0])
		if err != nil {
			up.nc.Close()
			return
		}
		if keep {
			select {
			case r.idle <- up:
			default:
				keep = false
			}
		}
		if !keep {
			up.nc.Close()
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// get returns an idle backend connection, or dials one.
func (r *Relay) get() (*backendConn, error) {
	select {
	case b := <-r.idle:
		return b, nil
	default:
	}
	nc, err := net.Dial("tcp", r.backend)
	if err != nil {
		return nil, err
	}
	return &backendConn{nc: nc, br: bufio.NewReaderSize(nc, 8192)}, nil
}

// readAnswer appends one answer, head and Content-Length body, to out,
// and reports whether the backend keeps the connection (no Connection:
// close, which it answers a request that asked for it with).
func readAnswer(br *bufio.Reader, out []byte) (_ []byte, keep bool, _ error) {
	n, keep := -1, true
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return nil, false, err
		}
		out = append(out, line...)
		if len(line) <= 2 {
			break
		}
		if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
		}
		if bytes.EqualFold(bytes.TrimSpace(line), []byte("Connection: close")) {
			keep = false
		}
	}
	if n < 0 {
		return nil, false, errors.New("floorrelay: an answer without Content-Length")
	}
	start := len(out)
	out = append(out, make([]byte, n)...)
	_, err := io.ReadFull(br, out[start:])
	return out, keep, err
}
