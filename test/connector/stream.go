// This file implements streams to tcp://, ssh:// and rdp:// services: the
// visitor's side at the edge and the connector's relay to the origin.

package connector

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// StreamRefused is a stream the tunnel did not open: Status is what the
// visitor's client was answered (404 no rule, 403 or 502 Access refused,
// 502 origin unreachable), Message the body's first line.
type StreamRefused struct {
	Hostname string
	Status   int
	Message  string
}

func (e *StreamRefused) Error() string {
	return fmt.Sprintf("connector: stream to %s refused: %d %s", e.Hostname, e.Status, e.Message)
}

// Stream opens a visitor's stream to hostname through the tunnel, as
// `cloudflared access tcp` (ssh, rdp) does: a WebSocket to the hostname,
// which the edge sends to a connector as a stream marked with
// upgradeHeader. A non-empty token is sent as Cf-Access-Jwt-Assertion,
// as the edge sends the token Access signed for a visitor it approved
// (Access at the edge is not modeled: the token goes as given). The
// stream carries the bytes both ways, open until it is closed or ctx
// ends; a refusal is a *StreamRefused.
func (e *Edge) Stream(ctx context.Context, hostname, token string) (io.ReadWriteCloser, error) {
	h := http.Header{}
	if token != "" {
		h.Set(accessJWTHeader, token)
	}
	res, err := e.WebSocket(ctx, "http://"+hostname+"/", h)
	if err != nil {
		return nil, err
	}
	if res.StatusCode == http.StatusSwitchingProtocols {
		return res.Body.(io.ReadWriteCloser), nil
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 1<<10))
	line, _, _ := strings.Cut(string(msg), "\n")
	return nil, &StreamRefused{Hostname: hostname, Status: res.StatusCode, Message: line}
}

// streamDialTimeout and streamKeepAlive are cloudflared's originRequest
// defaults connectTimeout and tcpKeepAlive, which a stream's dialer takes.
const (
	streamDialTimeout = 30 * time.Second
	streamKeepAlive   = 30 * time.Second
)

// stream carries a visitor's stream to a tcp://, ssh:// or rdp:// origin
// as cloudflared's tcpOverWSService does, once the rule's access check
// let it through: it dials the origin (502 when it cannot, so nothing was
// acknowledged), acknowledges the stream with 200 (cloudflared's 101, with
// the Sec-WebSocket-Accept of the visitor's key, which HTTP/2 carries as
// 200), and relays bytes both ways until either side ends, then closes
// both (relay).
func (c *connector) stream(w http.ResponseWriter, r *http.Request, rl *rule) {
	d := net.Dialer{Timeout: streamDialTimeout, KeepAlive: streamKeepAlive}
	conn, err := d.DialContext(r.Context(), "tcp", rl.stream)
	if err != nil {
		c.opts.Log.Info("stream origin unreachable", "service", rl.service, "err", err)
		http.Error(w, "connector: origin: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer conn.Close()
	if key := r.Header.Get("Sec-WebSocket-Key"); key != "" {
		w.Header().Set("Sec-WebSocket-Accept", WebSocketAccept(key))
	}
	relay(w, r.Body, conn)
}
