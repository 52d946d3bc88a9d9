package integration_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/controller"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/internal/pprofgate"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// Both processes' admin listeners serve pprof to loopback peers only,
// unless -pprof says otherwise, and everything else on them to anyone.
// The listeners are on 127.0.0.1, and the refused peer is real: this
// package runs in a network namespace of its own (TestMain) where
// netns.Range is local, so a client bound to one of its addresses
// connects from an address that is not loopback, as another pod reaches
// a pod's admin port.
func TestAdminPprofOnlyForLoopback(t *testing.T) {
	cl := newClients(t, shared.Env(t))
	c, err := controller.New(controller.Options{Kube: cl.kube, Gateway: cl.gw, Dynamic: cl.dyn, Log: testLog(0)})
	if err != nil {
		t.Fatal(err)
	}
	// admin serves a process's admin listener on 127.0.0.1 as its command
	// does, until the test ends, and returns its address and a path
	// anyone may read there.
	admin := map[string]func(t *testing.T, m pprofgate.Mode) (addr, open string){
		"proxy": func(t *testing.T, m pprofgate.Mode) (string, string) {
			p := dataplane.New(dataplane.Options{Log: testLog(0), Pprof: m})
			ctx, cancel := context.WithCancel(context.Background())
			bound, done := make(chan string, 1), make(chan error, 1)
			go func() {
				done <- p.Serve(ctx, dataplane.ServeOptions{Admin: "127.0.0.1:0", Grace: time.Second,
					Ready: func(b dataplane.Bound) { bound <- b.Admin }})
			}()
			t.Cleanup(func() { cancel(); <-done; p.Close() })
			select {
			case a := <-bound:
				return a, "/metrics"
			case err := <-done:
				t.Fatalf("proxy admin listener: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatal("proxy admin listener not open after 10 s")
			}
			return "", ""
		},
		"controller": func(t *testing.T, m pprofgate.Mode) (string, string) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: c.AdminHandler(controller.AdminOptions{Pprof: m}), ReadHeaderTimeout: 5 * time.Second}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
			return ln.Addr().String(), "/healthz"
		},
	}
	loopback := adminClient(t, nil)
	remotePeer := netns.Addr(7)
	remote := adminClient(t, &net.TCPAddr{IP: remotePeer.AsSlice()})
	for process, start := range admin {
		t.Run(process, func(t *testing.T) {
			addr, open := start(t, pprofgate.Loopback)
			base := "http://" + addr
			for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap"} {
				if code, body, from := adminGet(t, remote, base+p); code != http.StatusForbidden || body != pprofgate.Refused || from != remotePeer {
					t.Errorf("%s from %s: %d %q; want 403 %q from %s", p, from, code, body, pprofgate.Refused, remotePeer)
				}
			}
			if code, _, _ := adminGet(t, remote, base+open); code != 200 {
				t.Errorf("%s from %s: %d; only pprof is for loopback peers", open, remotePeer, code)
			}
			if code, body, from := adminGet(t, loopback, base+"/debug/pprof/cmdline"); code != 200 || body == "" || !from.IsLoopback() {
				t.Errorf("/debug/pprof/cmdline from %s (loopback, as kubectl port-forward): %d %q", from, code, body)
			}

			addr, _ = start(t, pprofgate.All)
			if code, _, _ := adminGet(t, remote, "http://"+addr+"/debug/pprof/cmdline"); code != 200 {
				t.Errorf("-pprof all: /debug/pprof/cmdline from %s: %d", remotePeer, code)
			}

			addr, _ = start(t, pprofgate.Off)
			if code, body, _ := adminGet(t, loopback, "http://"+addr+"/debug/pprof/cmdline"); code != http.StatusNotFound || body != pprofgate.Disabled {
				t.Errorf("-pprof off: /debug/pprof/cmdline from loopback: %d %q", code, body)
			}
		})
	}
}

// adminClient connects from local (nil: the kernel's choice, loopback
// for a loopback destination), one connection per request.
func adminClient(t *testing.T, local *net.TCPAddr) *http.Client {
	tr := &http.Transport{
		DialContext:       (&net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}).DialContext,
		DisableKeepAlives: true,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// adminGet returns the status, the body and the IP address the request's
// connection left from.
func adminGet(t *testing.T, c *http.Client, url string) (int, string, netip.Addr) {
	t.Helper()
	var from netip.Addr
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		from = i.Conn.LocalAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), from
}
