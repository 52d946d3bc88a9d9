// This file tests a proxy older than its controller: a document with a
// setting the proxy does not know.

package configwatch_test

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
)

// syncBuffer is a log sink the proxy's goroutines write to while the
// test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// During an upgrade the controllers may run a release newer than some
// proxies. When the newer controller's config uses a setting the proxy
// does not know (a field it cannot decode), the proxy keeps serving its
// last config through its sockets and stays ready, says why in its log
// (the unknown field, that the controller is newer, the version it
// serves) and in tunnelgate_config_watch_failures_total{reason=
// "bad_answer"}, asks for the next version rather than again for the
// same bytes, and applies the next config it can read.
func TestNewerControllersConfigKeepsTheLast(t *testing.T) {
	a, b := backend(t, "a"), backend(t, "b")
	ctl := startController(t, "", configserver.Options{})
	good := ctl.Publish(config("", a))
	logs := &syncBuffer{}
	px := startProxy(t, ctl.url, configwatch.Options{Log: slog.New(slog.NewTextHandler(logs, nil))})
	px.waitServes("app.example", "a")

	// The newer controller's document: one this release would serve for
	// a new config (made by a controller the proxy does not watch), with
	// a setting this release does not have.
	other := startController(t, "", configserver.Options{})
	newer := other.Publish(config("", b))
	raw := fetchDocument(t, other.url)
	withSetting := bytes.Replace(raw, []byte(`"config":{`), []byte(`"config":{"futureSetting":{"on":true},`), 1)
	if bytes.Equal(withSetting, raw) {
		t.Fatalf("the document has no config object: %.200s", raw)
	}
	ctl.stop()

	// The newer controller at the same address: it answers a proxy that
	// has the newer version by holding its request, as a controller
	// does, and any other with the document.
	var mu sync.Mutex
	var asked []string
	ln := listenAgain(t, ctl.addr)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.URL.Query().Get(configwatch.ParamVersion)
		mu.Lock()
		asked = append(asked, v)
		mu.Unlock()
		if v == newer {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", configwatch.ETag(newer))
		w.Write(withSetting)
	})}
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(ln) }()

	ws := px.w.Stats()
	waitFor(t, "the document refused", func() bool { return ws.Failures[configwatch.FailBadAnswer].Load() >= 1 })
	if code, body := px.get("app.example"); code != 200 || body != "a" {
		t.Errorf("after the newer controller's document: %d %q, want the last config's backend a", code, body)
	}
	if px.p.Version() != good {
		t.Errorf("serving version %q, want the last good %q", px.p.Version(), good)
	}
	if code, _ := px.admin("/readyz"); code != 200 {
		t.Errorf("/readyz %d: a proxy serving its last config must stay ready", code)
	}
	waitFor(t, "the reason in the log", func() bool { return strings.Contains(logs.String(), "futureSetting") })
	for _, want := range []string{`unknown field \"futureSetting\"`, "the controller is newer than this proxy", "upgrade the proxy",
		"still serving the current config", "version=" + good} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, logs.String())
		}
	}
	_, scrape := px.admin("/metrics")
	if v, ok := metricLine(scrape, `tunnelgate_config_watch_failures_total{reason="bad_answer"}`); !ok || v == "0" {
		t.Errorf(`tunnelgate_config_watch_failures_total{reason="bad_answer"} is %q (%v), want it counted`, v, ok)
	}

	// It asks with the version it could not read, and is held: no loop.
	waitFor(t, "a request for the next version", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(asked) > 0 && asked[len(asked)-1] == newer
	})
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	n := len(asked)
	mu.Unlock()
	if n != 2 {
		t.Errorf("the proxy asked %d times (%v); want the document once, then held asking for the next version", n, asked)
	}
	srv.Close()
	<-served

	// A controller whose config it can read (one that no longer uses the
	// setting, or rolled back, so a version of other bytes): the proxy
	// applies it.
	back := startController(t, ctl.addr, configserver.Options{})
	back.Publish(config("back", b))
	px.waitServes("app.example", "b")
}

// fetchDocument is the document a controller serves at url, whole.
func fetchDocument(t *testing.T, url string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+configwatch.Path+"?"+configwatch.ParamWait+"=0s", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v: %.200s", url, res.Status, err, b)
	}
	if _, err := configwatch.DecodeDocument(b); err != nil {
		t.Fatalf("the controller's document does not decode: %v", err)
	}
	return b
}

// listenAgain listens on addr, which a server just closed.
func listenAgain(t *testing.T, addr string) net.Listener {
	t.Helper()
	for i := 0; ; i++ {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			return ln
		}
		if i == 100 {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
