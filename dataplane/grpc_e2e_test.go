package dataplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// End-to-end tests of gRPC-shaped traffic without a gRPC library: the
// client is HTTP/2 over TLS to the TLS origin listener (as cloudflared
// speaks to an origin for gRPC), messages are length-prefixed, and the
// status travels in trailers.

// grpcFrame is one gRPC message: flag 0 (not compressed), a 4-byte
// big-endian length, the message.
func grpcFrame(msg string) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// grpcRead reads one message.
func grpcRead(r io.Reader) (string, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return "", err
	}
	if h[0] != 0 {
		return "", fmt.Errorf("compressed flag %d", h[0])
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > 1<<20 {
		return "", fmt.Errorf("message of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("message body: %w", err)
	}
	return string(b), nil
}

// grpcCheckRequest returns what is wrong with a request a gRPC server
// would refuse, or "".
func grpcCheckRequest(r *http.Request) string {
	switch {
	case r.ProtoMajor != 2:
		return "HTTP/" + strconv.Itoa(r.ProtoMajor) + ", want HTTP/2"
	case r.Method != "POST":
		return "method " + r.Method
	case r.Header.Get("Content-Type") != "application/grpc":
		return "content-type " + r.Header.Get("Content-Type")
	case r.Header.Get("Te") != "trailers":
		return "te " + strconv.Quote(r.Header.Get("Te"))
	}
	return ""
}

// grpcEcho is a unary method: it answers the request's message prefixed
// with "echo:" and its name, and the status in trailers: two declared in
// the Trailer header, one set with http.TrailerPrefix.
func grpcEcho(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/grpc")
		h.Set("Trailer", "Grpc-Status, Grpc-Message")
		if bad := grpcCheckRequest(r); bad != "" {
			w.WriteHeader(200)
			h.Set("Grpc-Status", "3")
			h.Set("Grpc-Message", "bad request: "+bad)
			return
		}
		msg, err := grpcRead(r.Body)
		if err != nil {
			w.WriteHeader(200)
			h.Set("Grpc-Status", "3")
			h.Set("Grpc-Message", "reading the message: "+err.Error())
			return
		}
		w.WriteHeader(200)
		w.Write(grpcFrame("echo:" + name + ":" + msg))
		h.Set("Grpc-Status", "0")
		h.Set("Grpc-Message", "ok")
		h.Set(http.TrailerPrefix+"X-Echo-Backend", name)
	}
}

// grpcRequest is a unary call to method on the TLS origin listener.
func grpcRequest(ctx context.Context, e *testEnv, method string, body []byte) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, "POST", "https://"+e.bound.OriginTLS+method, bytes.NewReader(body))
	req.Host = "grpc.example.com"
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	req.Header.Set("Grpc-Timeout", "5S")
	return req
}

// grpcTLSBackend serves h over TLS with h2 and returns its address and the
// cluster TLS settings that reach it.
func grpcTLSBackend(t *testing.T, h http.HandlerFunc) (string, proxycfg.TLSSettings) {
	t.Helper()
	ca := ptCA(t, "grpc CA")
	leaf := ptLeaf(t, ca, "grpc", []string{"grpc.internal"}, nil, x509.ExtKeyUsageServerAuth)
	addr := ptTLSBackend(t, &tls.Config{Certificates: []tls.Certificate{leaf.tlsCert()}}, true, h)
	return addr, proxycfg.TLSSettings{SNI: "grpc.internal", CAPEM: ca.certPEM(), H2: true}
}

// grpcClusters starts h behind each kind of HTTP/2 cluster.
func grpcClusters(t *testing.T, h http.HandlerFunc) map[string]proxycfg.Cluster {
	t.Helper()
	h2c := cluster("b", h2cBackend(t, h))
	h2c.Protocol = proxycfg.ProtoH2C
	addr, s := grpcTLSBackend(t, h)
	return map[string]proxycfg.Cluster{"h2c": h2c, "tls": ptTLSCluster("b", addr, s)}
}

func TestGRPCE2EUnary(t *testing.T) {
	t.Parallel()
	for kind, c := range grpcClusters(t, grpcEcho("svc")) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			e := ptEnv(t, config([]proxycfg.Route{{Name: "g", Kind: proxycfg.KindGRPC, Rules: []proxycfg.Rule{to("b")}}}, c))
			for i := range 3 { // the later calls reuse the connections
				msg := "hello-" + strconv.Itoa(i)
				res, body := e.do(e.h2, grpcRequest(t.Context(), e, "/echo.Echo/Say", grpcFrame(msg)))
				if res.StatusCode != 200 || res.ProtoMajor != 2 {
					t.Fatalf("status %d over HTTP/%d", res.StatusCode, res.ProtoMajor)
				}
				if got := res.Header.Get("Content-Type"); got != "application/grpc" {
					t.Errorf("content-type %q", got)
				}
				if got, want := body, string(grpcFrame("echo:svc:"+msg)); got != want {
					t.Errorf("body %q, want %q", got, want)
				}
				for k, want := range map[string]string{"Grpc-Status": "0", "Grpc-Message": "ok", "X-Echo-Backend": "svc"} {
					if got := res.Trailer.Get(k); got != want {
						t.Errorf("trailer %s = %q, want %q (trailers %v, header %v)", k, got, want, res.Trailer, res.Header)
					}
				}
			}
		})
	}
}

// TestGRPCE2EServerStreaming checks that each message of a stream reaches
// the client as soon as the backend has flushed it: the backend may send
// message n+1 only after the client has read message n.
func TestGRPCE2EServerStreaming(t *testing.T) {
	t.Parallel()
	const n = 5
	type stream struct {
		next  chan struct{} // the test lets the backend send the next message
		abort chan struct{} // closed when the test ends
		done  chan error    // the handler's outcome
	}
	streams := make(chan stream, 4)
	h := func(w http.ResponseWriter, r *http.Request) {
		s := <-streams
		var err error
		defer func() { s.done <- err }()
		if bad := grpcCheckRequest(r); bad != "" {
			err = errors.New(bad)
			w.WriteHeader(400)
			return
		}
		if _, err = grpcRead(r.Body); err != nil {
			w.WriteHeader(400)
			return
		}
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status")
		w.WriteHeader(200)
		fl := http.NewResponseController(w)
		for i := 1; i <= n; i++ {
			if i > 1 {
				select {
				case <-s.next:
				case <-s.abort:
					err = fmt.Errorf("message %d: the test ended", i)
					return
				case <-r.Context().Done():
					err = fmt.Errorf("message %d: client went away", i)
					return
				}
			}
			w.Write(grpcFrame("msg-" + strconv.Itoa(i)))
			if err = fl.Flush(); err != nil {
				return
			}
		}
		w.Header().Set("Grpc-Status", "0")
	}
	for kind, c := range grpcClusters(t, h) {
		t.Run(kind, func(t *testing.T) {
			e := ptEnv(t, config([]proxycfg.Route{{Name: "g", Kind: proxycfg.KindGRPC, Rules: []proxycfg.Rule{to("b")}}}, c))
			s := stream{next: make(chan struct{}), abort: make(chan struct{}), done: make(chan error, 1)}
			t.Cleanup(func() { close(s.abort) }) // before the servers close
			streams <- s
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			res, err := e.h2.Do(grpcRequest(ctx, e, "/echo.Echo/Watch", grpcFrame("watch")))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if res.StatusCode != 200 {
				t.Fatalf("status %d", res.StatusCode)
			}
			for i := 1; i <= n; i++ {
				var msg string
				// The backend is blocked until this read is done, so a
				// proxy that held the message back never delivers it.
				ptWithin(t, 3*time.Second, fmt.Sprintf("reading message %d before the backend may send the next", i), func() error {
					var err error
					msg, err = grpcRead(res.Body)
					return err
				})
				if want := "msg-" + strconv.Itoa(i); msg != want {
					t.Fatalf("message %d is %q, want %q", i, msg, want)
				}
				if i < n {
					s.next <- struct{}{}
				}
			}
			if rest, err := io.ReadAll(res.Body); err != nil || len(rest) != 0 {
				t.Fatalf("after the stream: %d bytes, %v", len(rest), err)
			}
			if got := res.Trailer.Get("Grpc-Status"); got != "0" {
				t.Errorf("Grpc-Status trailer %q", got)
			}
			if err := <-s.done; err != nil {
				t.Errorf("backend: %v", err)
			}
		})
	}
}

// TestGRPCE2EProxyErrors checks the answers the proxy makes itself to gRPC
// clients: HTTP 200 with a gRPC status in the headers (trailers-only).
func TestGRPCE2EProxyErrors(t *testing.T) {
	t.Parallel()
	empty := cluster("empty")
	empty.Protocol = proxycfg.ProtoH2C
	down := cluster("down", closedAddr(t))
	down.Protocol = proxycfg.ProtoH2C
	cfg := config([]proxycfg.Route{{Name: "g", Kind: proxycfg.KindGRPC, Rules: []proxycfg.Rule{
		{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/empty.Svc/"}}}, Backends: []proxycfg.BackendRef{{Cluster: "empty", Weight: 1}}},
		{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/down.Svc/"}}}, Backends: []proxycfg.BackendRef{{Cluster: "down", Weight: 1}}},
	}}}, empty, down)
	e := ptEnv(t, cfg)
	for _, c := range []struct {
		method string
		code   string
	}{
		{"/empty.Svc/Call", "14"},   // no ready endpoints: UNAVAILABLE
		{"/down.Svc/Call", "14"},    // connection refused: UNAVAILABLE
		{"/nothing.Svc/Call", "12"}, // no route: UNIMPLEMENTED
	} {
		res, body := e.do(e.h2, grpcRequest(t.Context(), e, c.method, grpcFrame("x")))
		if res.StatusCode != 200 {
			t.Errorf("%s: HTTP status %d, want 200 (gRPC clients read the status from grpc-status)", c.method, res.StatusCode)
		}
		if got := res.Header.Get("Content-Type"); got != "application/grpc" {
			t.Errorf("%s: content-type %q", c.method, got)
		}
		got := res.Header.Get("Grpc-Status")
		if got == "" {
			got = res.Trailer.Get("Grpc-Status")
		}
		if got != c.code {
			t.Errorf("%s: grpc-status %q, want %s (message %q, body %q)", c.method, got, c.code, res.Header.Get("Grpc-Message"), body)
		}
		if body != "" {
			t.Errorf("%s: trailers-only answer has a body %q", c.method, body)
		}
	}
}
