package connector

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// originClient is where one rule's requests go, as cloudflared's origin client
// sends them (see doc.go).
type originClient struct {
	service   string
	target    *url.URL // scheme and host of the requests; nil for a unix: service (the Host is the visitor's)
	socket    bool     // a unix: service
	log       *slog.Logger
	transport *http.Transport
	proxy     *httputil.ReverseProxy
}

// errUnixWebSocket is what cloudflared logs, and answers 502 for, when a
// WebSocket is sent to a unix: service under the http2 protocol
// (cloudflare/cloudflared#560, observed with 2026.8.2): the request never
// reaches the origin.
var errUnixWebSocket = errors.New("http: no Host in request URL")

// newOrigin sends requests to the rule's origin over HTTP/1.1 with
// keep-alive, their Host and headers unchanged; to an https:// origin
// over TLS, verified with the rule's caPool for its originServerName, and
// over HTTP/2 when http2Origin lets the transport ask for h2.
func newOrigin(rl *rule, log *slog.Logger) *originClient {
	t := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second, ResponseHeaderTimeout: 60 * time.Second,
		// What http2Origin sets in cloudflared: HTTP/2 is offered in the
		// TLS handshake (ALPN h2), so a cleartext origin still gets
		// HTTP/1.1.
		ForceAttemptHTTP2: rl.request.HTTP2Origin}
	o := &originClient{service: rl.service, target: rl.origin, log: log, transport: t}
	if socket := rl.socket; socket != "" {
		o.socket = true
		t.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}
	}
	if rl.origin != nil && rl.origin.Scheme == "https" {
		t.TLSClientConfig = &tls.Config{RootCAs: rl.roots, ServerName: rl.request.OriginServerName}
	}
	o.proxy = &httputil.ReverseProxy{
		Transport: t,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = o.scheme(), pr.In.Host
			if o.target != nil {
				pr.Out.URL.Host = o.target.Host
			}
			pr.Out.Host = pr.In.Host
			// Rewrite drops these; the edge set them and cloudflared
			// passes them on.
			for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Proto"} {
				if v := pr.In.Header.Values(k); len(v) > 0 {
					pr.Out.Header[k] = v
				}
			}
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			o.failed(w, err)
		},
	}
	return o
}

func (o *originClient) scheme() string {
	if o.target != nil {
		return o.target.Scheme
	}
	return "http"
}

func (o *originClient) failed(w http.ResponseWriter, err error) {
	o.log.Info("origin request failed", "service", o.service, "err", err)
	http.Error(w, "connector: origin: "+err.Error(), http.StatusBadGateway)
}

// websocket carries a visitor's WebSocket, as cloudflared does with a
// stream the edge marks with upgradeHeader: it sends the origin an
// HTTP/1.1 GET with Connection: Upgrade, Upgrade: websocket and
// Sec-WebSocket-Version: 13 put back (HTTP/2 carries none of them), and
// after the origin's 101 answers the edge 200 (HTTP/2 has no 101) and
// pipes the stream's bytes both ways until either side ends, then closes
// both. Any other answer goes back as it came. To a unix: service it
// answers 502 without sending anything (errUnixWebSocket).
func (o *originClient) websocket(w http.ResponseWriter, r *http.Request) {
	if o.socket {
		o.failed(w, errUnixWebSocket)
		return
	}
	u := *r.URL
	u.Scheme, u.Host = o.scheme(), o.target.Host
	out, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		o.failed(w, err)
		return
	}
	out.Host = r.Host
	out.Header = r.Header.Clone()
	out.Header.Del(upgradeHeader)
	out.Header.Set("Connection", "Upgrade")
	out.Header.Set("Upgrade", "websocket")
	out.Header.Set("Sec-Websocket-Version", "13")
	res, err := o.transport.RoundTrip(out)
	if err != nil {
		o.failed(w, err)
		return
	}
	defer res.Body.Close()
	h := w.Header()
	for k, v := range res.Header {
		h[k] = v
	}
	removeHopByHop(h)
	if res.StatusCode != http.StatusSwitchingProtocols {
		w.WriteHeader(res.StatusCode)
		_, _ = io.Copy(w, res.Body)
		return
	}
	conn, ok := res.Body.(io.ReadWriteCloser)
	if !ok {
		o.failed(w, errors.New("101 without a connection"))
		return
	}
	relay(w, r.Body, conn)
}

// relay answers the edge's stream 200 (HTTP/2's acceptance of an
// upgrade or a stream, where HTTP/1.1 has 101), then carries bytes both
// ways between the stream (body, and w) and conn until either side
// ends, and closes conn.
func relay(w http.ResponseWriter, body io.Reader, conn io.ReadWriteCloser) {
	defer conn.Close()
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	go func() {
		_, _ = io.Copy(conn, body)
		conn.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil || rc.Flush() != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// hopByHop are the fields of one connection (RFC 9110, section 7.6.1),
// which neither the edge nor a connector passes on; "Te: trailers" alone
// crosses HTTP/2 (RFC 9113, section 8.2.2), and gRPC needs it.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade"}

// removeHopByHop deletes from h the hop-by-hop fields and those the
// Connection field names; a Te naming trailers becomes "Te: trailers".
func removeHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopByHop {
		h.Del(k)
	}
	if te := h.Values("Te"); len(te) > 0 {
		h.Del("Te")
		if httpguts.HeaderValuesContainsToken(te, "trailers") {
			h.Set("Te", "trailers")
		}
	}
}
