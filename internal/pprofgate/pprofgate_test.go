package pprofgate

import (
	"context"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// These tests reach the gate through real sockets on this host, where
// every peer is local. That a peer from another address is refused
// through a real socket is tested in test/integration
// (TestAdminPprofOnlyForLoopback), whose tests run in a network namespace
// where such addresses exist.

func TestModeFlag(t *testing.T) {
	for _, s := range []string{"loopback", "all", "off"} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var m Mode
		fs.Var(&m, "pprof", "")
		if err := fs.Parse([]string{"-pprof", s}); err != nil || m.String() != s {
			t.Errorf("-pprof %s: got %v, %v", s, m, err)
		}
	}
	var m Mode
	if m != Loopback || m.String() != "loopback" {
		t.Errorf("the zero Mode is %v; want loopback, the safe default", m)
	}
	if err := m.Set("everyone"); err == nil || !strings.Contains(err.Error(), "loopback, all or off") {
		t.Errorf("Set(everyone): %v", err)
	}
}

// serve runs Handler(m) on a real listener until the test ends and
// returns a client that dials it.
func serve(t *testing.T, network, addr string, m Mode) (*http.Client, string) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/pprof/", Handler(m))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, ln.Addr().String())
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dial}}, "http://admin"
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	res, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestLoopbackPeersAreServed(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		c, base := serve(t, "tcp", addr, Loopback)
		if code, body := get(t, c, base+"/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
			t.Errorf("%s: index %d %.100q", addr, code, body)
		}
		if code, body := get(t, c, base+"/debug/pprof/cmdline"); code != 200 || body == "" {
			t.Errorf("%s: cmdline %d %q", addr, code, body)
		}
	}
}

func TestUnixSocketPeersAreServed(t *testing.T) {
	c, base := serve(t, "unix", filepath.Join(t.TempDir(), "admin.sock"), Loopback)
	if code, body := get(t, c, base+"/debug/pprof/goroutine?debug=1"); code != 200 || !strings.Contains(body, "goroutine profile") {
		t.Errorf("goroutine profile over a unix socket: %d %.100q", code, body)
	}
}

func TestOffServesNoOne(t *testing.T) {
	c, base := serve(t, "tcp", "127.0.0.1:0", Off)
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		if code, body := get(t, c, base+p); code != http.StatusNotFound || body != Disabled {
			t.Errorf("%s: %d %q; want 404 %q", p, code, body, Disabled)
		}
	}
}

func TestAllServesLoopbackToo(t *testing.T) {
	c, base := serve(t, "tcp", "127.0.0.1:0", All)
	if code, _ := get(t, c, base+"/debug/pprof/"); code != 200 {
		t.Errorf("index: %d", code)
	}
}

// Which peers count as local. The peer comes from the connection, so these
// RemoteAddr values are what net/http sets for such connections.
func TestLocalPeers(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:4000":        true,
		"127.1.2.3:4000":        true,
		"[::1]:4000":            true,
		"[::ffff:127.0.0.1]:80": true,
		"10.244.0.2:4000":       false,
		"[2001:db8::1]:4000":    false,
		"[::ffff:10.0.0.1]:80":  false,
		"":                      false,
		"localhost:80":          false,
	} {
		r := httptest.NewRequest("GET", "/debug/pprof/", nil)
		r.RemoteAddr = addr
		if got := local(r); got != want {
			t.Errorf("local(%q) = %v, want %v", addr, got, want)
		}
		w := httptest.NewRecorder()
		Handler(Loopback).ServeHTTP(w, r)
		if !want && (w.Code != http.StatusForbidden || w.Body.String() != Refused) {
			t.Errorf("%q: %d %q; want 403 %q", addr, w.Code, w.Body.String(), Refused)
		}
	}
}
