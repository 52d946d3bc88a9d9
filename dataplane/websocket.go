// This file forwards WebSocket.

package dataplane

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	relay "github.com/tunnelgate/tunnelgate/dataplane/pipe"
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
	// Both HTTP connections' buffers are let go here, once the bytes they
	// hold are copied: the tunnel holds no buffer while it is quiet.
	fromClient := http1.Unread(cbuf.Reader)
	backend, fromBackend := c.Tunnel()
	tunnel(cc, fromClient, backend, fromBackend, x.h.p.opts.WebSocketIdle)
	c.Close() // give the connection's place back to the pool
}

// tunnel relays bytes between the client's connection and the backend's
// (package pipe) until both directions end or nothing moves for idle;
// fromClient and fromBackend are the bytes already read from each.
// Between two plain sockets the bytes move inside the kernel, and a quiet
// WebSocket holds no buffer. The connections are closed when it returns.
func tunnel(client net.Conn, fromClient []byte, backend net.Conn, fromBackend []byte, idle time.Duration) {
	relay.Run(context.Background(), client, backend, relay.Options{
		Idle:      idle,
		HalfClose: -1, // one side's end bounds the other only by idle
		Preface:   fromClient,
		Reply:     fromBackend,
	})
}
