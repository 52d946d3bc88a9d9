package dataplane

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

func TestProxyForwardsRequestAndResponse(t *testing.T) {
	be := startBackend(t, echo("a"))
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", be)))
	res, body := e.get("app.example.com", "/x/../y/%7euser?q=1&q=2", "Connection", "X-Drop", "X-Drop", "gone", "X-Keep", "kept")
	if res.StatusCode != 200 {
		t.Fatalf("status %d, body %q", res.StatusCode, body)
	}
	for name, want := range map[string]string{
		"target":            "/y/~user?q=1&q=2",
		"host":              "app.example.com",
		"X-Keep":            "kept",
		"X-Drop":            "",
		"X-Forwarded-For":   "127.0.0.1",
		"X-Forwarded-Proto": "http",
	} {
		if got := echoed(body, name); got != want {
			t.Errorf("%s = %q, want %q\n%s", name, got, want, body)
		}
	}
	if got := res.Header.Get("Content-Type"); got != "text/plain" {
		t.Errorf("Content-Type = %q", got)
	}
}

func TestProxyDoesNotInventContentType(t *testing.T) {
	be := startBackend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil
		w.Write([]byte("<html>not sniffed</html>"))
	})
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", be)))
	res, _ := e.get("h", "/")
	if v, ok := res.Header["Content-Type"]; ok {
		t.Errorf("Content-Type %q added", v)
	}
}

func TestProxyPostBodies(t *testing.T) {
	be := startBackend(t, echo("a"))
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", be)))
	for _, size := range []int{1, 1000, 100_000, 1 << 20} {
		payload := strings.Repeat("x", size)
		// Known length.
		req, _ := http.NewRequest("POST", e.url("/"), strings.NewReader(payload))
		_, body := e.do(e.client, req)
		if got := echoed(body, "body"); got != payload {
			t.Fatalf("size %d: body of %d bytes arrived", size, len(got))
		}
		// Unknown length: sent chunked.
		req, _ = http.NewRequest("POST", e.url("/"), struct{ *strings.Reader }{strings.NewReader(payload)})
		req.ContentLength = -1
		_, body = e.do(e.client, req)
		if got := echoed(body, "body"); got != payload {
			t.Fatalf("size %d chunked: body of %d bytes arrived", size, len(got))
		}
	}
}
