// This file forwards WebSocket.

package dataplane

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
)

// forwardWebSocket carries a WebSocket handshake (RFC 6455 over HTTP/1.1
// Upgrade) to the backend. When the backend answers 101, both connections
// are taken over and bytes are copied each way until one side closes or
// the tunnel is idle for Options.WebSocketIdle. Any other answer is passed
// on as a normal response. For a TLS cluster this is wss.
func (x *exchange) forwardWebSocket(w http.ResponseWriter, r *http.Request) {
	stats := &x.h.p.stats
	x.out.upgrade = "websocket"
	ep := x.ep
	if ep == nil {
		ep = x.cs.pick(nil)
	}
	ep.inflight.Add(1)
	defer ep.inflight.Add(-1)
	began := x.beginAttempt(ep, 0)
	c, head, bodyDone, err := x.send(r.Context(), ep, x.tryDeadline(x.deadline()))
	if err != nil {
		err = x.failure(err)
		x.endAttempt(began, 0, err)
		if err == errClientGone {
			x.abandon()
		}
		status, msg := upstreamFailure(err, stats)
		reply(w, r, stats, status, msg)
		return
	}
	defer http1.PutHead(head)
	x.endAttempt(began, head.Status, nil)
	x.ep = ep
	if head.Status != http.StatusSwitchingProtocols {
		head.Close = true // the handshake's Connection header was ours
		x.respond(w, r, c, head, bodyDone)
		return
	}
	x.waitOff() // the tunnel watches both sides itself
	cc, cbuf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		c.Close()
		reply(w, r, stats, http.StatusInternalServerError, "cannot take over the connection")
		return
	}
	stats.Status(http.StatusSwitchingProtocols)
	x.rec.status = http.StatusSwitchingProtocols
	stats.WebSockets.Add(1)
	// The 101 head goes to the client as the backend sent it: Upgrade,
	// Connection and Sec-WebSocket-Accept are the handshake itself.
	cbuf.WriteString("HTTP/1.1 101 Switching Protocols\r\n")
	// The proxy's own response headers (the backend's modifier, CORS, a
	// session cookie) join the handshake answer.
	hdr := http.Header{}
	x.responseFilters(r, hdr)
	head.WriteFields(cbuf.Writer)
	for k, vs := range hdr {
		for _, v := range vs {
			http1.WriteField(cbuf.Writer, k, v)
		}
	}
	cbuf.WriteString("\r\n")
	if err := cbuf.Flush(); err != nil {
		cc.Close()
		c.Close()
		return
	}
	x.rec.upgraded = time.Now()
	tunnel(cc, cbuf.Reader, c.NetConn(), c.Reader(), x.h.p.opts.WebSocketIdle)
	c.Close() // give the connection's place back to the pool
}

// tunnel copies a ↔ b until both directions end or nothing moves for
// idle. ra and rb hold bytes already read from a and b.
func tunnel(a net.Conn, ra *bufio.Reader, b net.Conn, rb *bufio.Reader, idle time.Duration) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	var wg sync.WaitGroup
	wg.Add(2)
	go pipe(&wg, b, a, ra, &last, idle)
	go pipe(&wg, a, b, rb, &last, idle)
	wg.Wait()
	a.Close()
	b.Close()
}

// pipe copies from src (through its reader) to dst. A read deadline that
// passes while the other direction was recently active is renewed; one
// that passes with both directions quiet ends the tunnel.
func pipe(wg *sync.WaitGroup, dst net.Conn, src net.Conn, r *bufio.Reader, last *atomic.Int64, idle time.Duration) {
	defer wg.Done()
	buf := make([]byte, 32<<10)
	for {
		src.SetReadDeadline(time.Unix(0, last.Load()).Add(idle))
		n, err := r.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			dst.SetWriteDeadline(time.Now().Add(idle))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				return
			}
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && time.Since(time.Unix(0, last.Load())) < idle {
				continue
			}
			if errors.Is(err, io.EOF) {
				// Half-close: tell the other side no more is coming.
				if cw, ok := dst.(interface{ CloseWrite() error }); ok {
					cw.CloseWrite()
					return
				}
			}
			dst.Close()
			src.Close()
			return
		}
	}
}
