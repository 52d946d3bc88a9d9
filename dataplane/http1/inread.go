// This file serves requests inside one long read of the client's socket.

package http1

import (
	"bufio"
	"bytes"
	"errors"
)

// Serving inside the read. Every read through the Go runtime's poller
// (rc.Read) starts by clearing what the poller knows of the socket's
// readiness, so the first thing such a read must do is try the socket:
// bytes that came in before the clearing would otherwise never be waited
// for. Between kept-alive requests that try nearly always finds nothing
// (EAGAIN): the client sends its next request only after it has the
// answer to this one. One system call per request for nothing; nginx,
// which keeps its own readiness, does not make it.
//
// The clearing happens once per rc.Read, not once per wait inside it: the
// function rc.Read calls may ask to wait (return false) and is called
// again when the socket is readable, as often as it likes. So the server
// serves its requests inside that function (inReadStep): it reads, serves
// each request the reader holds whole, and then, if its last read emptied
// the socket, asks to wait without reading again. Within one rc.Read the
// poller's readiness is never cleared: bytes that arrive after the last
// read mark the socket readable, and the wait ends at once.
//
// What "emptied" can be told from. A stream socket's read returns all the
// bytes it holds, up to the buffer, so a read shorter than the buffer
// leaves no bytes behind (one that filled the buffer may have: the socket
// is read again before any wait). It does not tell whether the client's
// close (FIN) or reset came in behind those bytes, though: that shows only
// at the next read, and if it came in before the read, it marked the
// socket readable before it too, so no wait will end for it. Only a read
// that found nothing (EAGAIN) says there is nothing, close included. So
// the read is skipped only where a close behind a request is not to be
// expected: on a connection that has already waited for a request once in
// this read (kept alive, as cloudflared's are), and not while a head is
// half read. A one-shot client that sends its request and closes at once
// is seen closing at once; a kept-alive client whose close comes in with
// its last request is seen by the janitor, which looks at an idle
// connection's socket once in each idle period (Server.janitor).
//
// Inside the read, the client's socket is read with raw calls that never
// wait (rawIO.inRead): a read that would wait fails with errWouldWait,
// and the step asks to wait. Nothing else may read the client meanwhile,
// and nothing may wait on it, so a request is served there only when it
// needs nothing more from the client: its head and all of its body are
// in the reader already (headBuffered), and it asks for no upgrade (an
// upgrade hands the socket to the handler, which then reads it). Any other
// request leaves the read (handOver, or needHead for a head larger than
// the reader's 4 KiB) and is read and served the usual way; the next one
// comes back. Writes to the client take the socket's write side, which
// is separate from its read side, and wait as usual. The janitor's limits
// hold unchanged: a close ends the wait with an error, and the phases are
// set as on the usual path. The client watch (waiton.go) looks at the
// socket without reading it, so it works inside the read too.

// errWouldWait is a raw read's inside the read, where it cannot wait.
var errWouldWait = errors.New("http1: read would wait")

// What serveInRead leaves to the request loop.
const (
	connDone = iota // the connection ends
	needHead        // read the next head the usual way
	handOver        // a head was read and begun: serve it the usual way
)

// inRead is a connection's state across the calls of one long read.
type inRead struct {
	next int // what the read leaves to the request loop, once it ends
	// calls counts the step's calls in this read: from the second on,
	// each comes after a wait that ended.
	calls int
}

// serveInRead serves requests inside one read of the client's socket
// until the connection ends or a request must be served the usual way.
func (c *conn) serveInRead() int {
	c.inRead.next, c.inRead.calls = connDone, 0
	err := c.raw.rc.Read(c.inReadFn)
	c.raw.inRead = false
	if err != nil {
		return connDone
	}
	return c.inRead.next
}

// inReadStep is what rc.Read calls: first, and again each time the
// socket turns readable after it asked to wait (false). It reports true
// to end the read, with c.inRead.next saying what follows.
func (c *conn) inReadStep(fd uintptr) bool {
	r := c.raw
	r.inRead, r.fd = true, fd
	// A call starts after the clearing or after a wait that ended: what
	// made the socket readable has not been read yet.
	r.drained = false
	c.inRead.calls++
	keptAlive := c.inRead.calls > 1 // it has waited for a request
	for {
		if c.br.Buffered() == 0 {
			c.setPhase(phaseIdle)
			if c.s.closing.Load() {
				return true
			}
			if r.drained && keptAlive {
				return false // no bytes left on the socket: wait
			}
			if _, err := c.br.Peek(1); err != nil {
				return err != errWouldWait // else a close or reset: the end
			}
		}
		c.setPhase(phaseHead)
		if !headBuffered(c.br) {
			if c.br.Buffered() == c.br.Size() {
				c.inRead.next = needHead // larger than the reader: the usual way
				return true
			}
			// The rest of the head, read until the socket has nothing
			// (EAGAIN) before a wait: a client may close after a part.
			_, err := c.br.Peek(c.br.Buffered() + 1)
			switch {
			case err == errWouldWait:
				return false
			case err != nil:
				c.inRead.next = needHead // a head cut short: the usual way answers it
				return true
			}
			continue
		}
		if err := readRequestHead(c.br, &c.q); err != nil {
			c.refuse(err)
			return true
		}
		c.begin()
		if !c.servableInRead() {
			c.inRead.next = handOver
			return true
		}
		if !c.respond() {
			return true
		}
	}
}

// servableInRead reports whether the request begun needs nothing more
// from the client: its body is in the reader whole (or it has none), and
// it asks for no upgrade.
func (c *conn) servableInRead() bool {
	if c.req.Header["Upgrade"] != nil {
		return false
	}
	return c.body.done || !c.q.chunked && c.q.contentLength <= int64(c.br.Buffered())
}

// headBuffered reports whether the reader holds a whole request head, so
// that readRequestHead reads it without reading the socket: a head ends at
// the first empty line, and the reader parses from its first byte on.
func headBuffered(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	return headEnds(b)
}

// headEnds reports whether b holds an empty line: a line feed followed by
// another, or by CR LF.
func headEnds(b []byte) bool {
	return bytes.Contains(b, crlfEmpty) || bytes.Contains(b, lfEmpty)
}

var crlfEmpty, lfEmpty = []byte("\n\r\n"), []byte("\n\n")
