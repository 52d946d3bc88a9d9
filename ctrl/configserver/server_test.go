package configserver

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
)

func resultAttr(name string) attribute.KeyValue { return attribute.String("result", name) }

func TestAnswersAtOnceWhenVersionsDiffer(t *testing.T) {
	ts := startServer(t, Options{Token: testToken})
	v := ts.Publish(smallConfig("127.0.0.1:1"))
	for _, q := range []string{"", "?version=", "?version=old", "?version=old&wait=1h"} {
		res, body := ts.get(t, q)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%q: status %d: %s", q, res.StatusCode, body)
		}
		doc, err := configwatch.DecodeDocument(body)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		if doc.Version != v || res.Header.Get("ETag") != configwatch.ETag(v) {
			t.Errorf("%q: version %q, ETag %q, want %q", q, doc.Version, res.Header.Get("ETag"), v)
		}
		if got := res.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("Cache-Control %q", got)
		}
		if got := res.Header.Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type %q", got)
		}
	}
	if n := ts.metric(t, "tunnelgate.config_server.requests", resultAttr("changed")); n != 4 {
		t.Errorf("requests{changed} = %d, want 4", n)
	}
}

func TestHoldsWhenVersionIsCurrentAnd304sAtTheBound(t *testing.T) {
	ts := startServer(t, Options{Token: testToken, MaxWait: 50 * time.Millisecond})
	v := ts.Publish(smallConfig("127.0.0.1:1"))
	// The server's cap applies when the proxy asks for longer; the
	// proxy's wait when it asks for less.
	for _, q := range []string{"?version=" + v, "?version=" + v + "&wait=1h", "?version=" + v + "&wait=10ms", "?version=" + v + "&wait=0s"} {
		res, body := ts.get(t, q)
		if res.StatusCode != http.StatusNotModified || len(body) != 0 {
			t.Fatalf("%q: status %d, body %q; want 304", q, res.StatusCode, body)
		}
		if res.Header.Get("ETag") != configwatch.ETag(v) || res.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%q: 304 without the ETag and Cache-Control a 200 has: %v", q, res.Header)
		}
	}
	if n := ts.metric(t, "tunnelgate.config_server.requests", resultAttr("not_modified")); n != 4 {
		t.Errorf("requests{not_modified} = %d, want 4", n)
	}
}

// Before the first Publish every request waits as if it had the version,
// and ends in 304 without an ETag.
func TestBeforeFirstPublishRequestsWait(t *testing.T) {
	ts := startServer(t, Options{Token: testToken, MaxWait: 20 * time.Millisecond})
	res, _ := ts.get(t, "")
	if res.StatusCode != http.StatusNotModified || res.Header.Get("ETag") != "" {
		t.Fatalf("status %d, ETag %q; want 304 without ETag", res.StatusCode, res.Header.Get("ETag"))
	}
}

// asyncGet starts a request and returns a channel with its response.
func asyncGet(t *testing.T, ts *testServer, query string) <-chan *http.Response {
	t.Helper()
	return asyncGetAs(t, ts, testToken, query)
}

// asyncGetAs is asyncGet with the given token.
func asyncGetAs(t *testing.T, ts *testServer, token, query string) <-chan *http.Response {
	t.Helper()
	ch := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest("GET", ts.url+configwatch.Path+query, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			close(ch)
			return
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		ch <- res
	}()
	return ch
}

// receive waits for a held request's answer. The request asked to be
// held for an hour: an answer within the bound means it was woken.
func receive(t *testing.T, ch <-chan *http.Response, what string) *http.Response {
	t.Helper()
	select {
	case res := <-ch:
		if res == nil {
			t.FailNow()
		}
		return res
	case <-time.After(10 * time.Second):
		t.Fatalf("no answer: %s", what)
		return nil
	}
}

func TestPublishWakesWaiters(t *testing.T) {
	ts := startServer(t, Options{Token: testToken, MaxWait: time.Hour})
	v1 := ts.Publish(smallConfig("127.0.0.1:1"))
	waiters := []<-chan *http.Response{
		asyncGet(t, ts, "?version="+v1), asyncGet(t, ts, "?version="+v1), asyncGet(t, ts, "?version="+v1),
	}
	waitFor(t, "three held requests", func() bool { return ts.metric(t, "tunnelgate.config_server.watchers") == 3 })

	// Republishing the same content wakes nobody for good.
	ts.Publish(smallConfig("127.0.0.1:1"))
	v2 := ts.Publish(smallConfig("127.0.0.1:2"))
	for i, ch := range waiters {
		res := receive(t, ch, "a Publish must wake held requests")
		if res.StatusCode != http.StatusOK || res.Header.Get("ETag") != configwatch.ETag(v2) {
			t.Errorf("waiter %d: status %d, ETag %q; want 200 with %s", i, res.StatusCode, res.Header.Get("ETag"), v2)
		}
	}
	waitFor(t, "no held requests", func() bool { return ts.metric(t, "tunnelgate.config_server.watchers") == 0 })
}

// A proxy that has no config yet is answered by the first Publish.
func TestFirstPublishWakesWaiters(t *testing.T) {
	ts := startServer(t, Options{Token: testToken, MaxWait: time.Hour})
	ch := asyncGet(t, ts, "")
	waitFor(t, "a held request", func() bool { return ts.metric(t, "tunnelgate.config_server.watchers") == 1 })
	v := ts.Publish(smallConfig("127.0.0.1:1"))
	if res := receive(t, ch, "the first Publish"); res.StatusCode != 200 || res.Header.Get("ETag") != configwatch.ETag(v) {
		t.Fatalf("status %d, ETag %q", res.StatusCode, res.Header.Get("ETag"))
	}
}

// Going back to the proxy's version within a wait is no change for it.
func TestPublishBackToTheWaitersVersionKeepsWaiting(t *testing.T) {
	ts := startServer(t, Options{Token: testToken, MaxWait: time.Hour})
	v1 := ts.Publish(smallConfig("127.0.0.1:1"))
	v2 := ts.Publish(smallConfig("127.0.0.1:2"))
	ch := asyncGet(t, ts, "?version="+v2)
	waitFor(t, "a held request", func() bool { return ts.metric(t, "tunnelgate.config_server.watchers") == 1 })
	ts.Publish(smallConfig("127.0.0.1:1")) // v1: wakes it
	res := receive(t, ch, "a publish of another version")
	if res.Header.Get("ETag") != configwatch.ETag(v1) {
		t.Fatalf("ETag %q, want %s", res.Header.Get("ETag"), v1)
	}
	// Now one holding v1 sees v2 then v1 again and is still held.
	ch = asyncGet(t, ts, "?version="+v1)
	waitFor(t, "a held request", func() bool { return ts.metric(t, "tunnelgate.config_server.watchers") == 1 })
	ts.Publish(smallConfig("127.0.0.1:2"))
	res = receive(t, ch, "v2")
	if res.Header.Get("ETag") != configwatch.ETag(v2) {
		t.Fatalf("ETag %q, want %s", res.Header.Get("ETag"), v2)
	}
}

func TestDrainAnswersHeldRequests(t *testing.T) {
	ts := startServer(t, Options{Token: testToken, MaxWait: time.Hour})
	v := ts.Publish(smallConfig("127.0.0.1:1"))
	ch := asyncGet(t, ts, "?version="+v)
	waitFor(t, "a held request", func() bool { return ts.metric(t, "tunnelgate.config_server.watchers") == 1 })
	ts.Drain()
	if res := receive(t, ch, "Drain"); res.StatusCode != http.StatusNotModified {
		t.Fatalf("status %d, want 304", res.StatusCode)
	}
	// From then on nothing is held.
	if res, _ := ts.get(t, "?version="+v); res.StatusCode != http.StatusNotModified {
		t.Fatalf("after Drain: status %d", res.StatusCode)
	}
}

func TestServeEndsHeldRequestsAtShutdown(t *testing.T) {
	ts := startServer(t, Options{Token: testToken, MaxWait: time.Hour})
	v := ts.Publish(smallConfig("127.0.0.1:1"))
	ch := asyncGet(t, ts, "?version="+v)
	waitFor(t, "a held request", func() bool { return ts.metric(t, "tunnelgate.config_server.watchers") == 1 })
	stopped := make(chan error, 1)
	go func() { stopped <- ts.stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return: a held request kept it")
	}
	if res := receive(t, ch, "shutdown"); res.StatusCode != http.StatusNotModified {
		t.Fatalf("status %d, want 304", res.StatusCode)
	}
}

func TestRefusesWithoutTheToken(t *testing.T) {
	token := testToken
	ts := startServer(t, Options{TokenFunc: func() string { return token }})
	ts.Publish(smallConfig("127.0.0.1:1"))
	for _, c := range []struct {
		name, auth, challenge string
	}{
		{"missing", "", `Bearer realm="tunnelgate"`},
		{"wrong", "Bearer nope", `Bearer realm="tunnelgate", error="invalid_token"`},
		{"prefix of the token", "Bearer " + testToken[:4], `Bearer realm="tunnelgate", error="invalid_token"`},
		{"longer", "Bearer " + testToken + "x", `Bearer realm="tunnelgate", error="invalid_token"`},
		{"other scheme", "Basic " + testToken, `Bearer realm="tunnelgate"`},
		{"empty bearer", "Bearer ", `Bearer realm="tunnelgate"`},
	} {
		res, body := ts.get(t, "", "Authorization", c.auth)
		if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != c.challenge {
			t.Errorf("%s: status %d, WWW-Authenticate %q; want 401 with %q", c.name, res.StatusCode, res.Header.Get("WWW-Authenticate"), c.challenge)
		}
		if bytes.Contains(body, []byte(`"clusters"`)) {
			t.Errorf("%s: the config was sent", c.name)
		}
	}
	// The scheme is case-insensitive (RFC 9110 §11.1).
	if res, _ := ts.get(t, "", "Authorization", "bearer "+testToken); res.StatusCode != 200 {
		t.Errorf("lower-case scheme: status %d", res.StatusCode)
	}
	// Rotation: the old token stops working, the new one works.
	token = "rotated"
	if res, _ := ts.get(t, ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("old token after rotation: status %d", res.StatusCode)
	}
	if res, _ := ts.get(t, "", "Authorization", "Bearer rotated"); res.StatusCode != 200 {
		t.Errorf("new token after rotation: status %d", res.StatusCode)
	}
	if n := ts.metric(t, "tunnelgate.config_server.requests", resultAttr("unauthorized")); n != 7 {
		t.Errorf("requests{unauthorized} = %d, want 7", n)
	}
}

// Without a token there is no way in: the config holds secrets.
func TestNoTokenRefusesEverything(t *testing.T) {
	ts := startServer(t, Options{})
	ts.Publish(smallConfig("127.0.0.1:1"))
	for _, auth := range []string{"", "Bearer ", "Bearer x"} {
		if res, _ := ts.get(t, "", "Authorization", auth); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%q: status %d, want 401", auth, res.StatusCode)
		}
	}
}

func TestBadRequests(t *testing.T) {
	ts := startServer(t, Options{Token: testToken})
	for _, q := range []string{"?wait=soon", "?wait=-1s", "?wait=5"} {
		if res, _ := ts.get(t, q); res.StatusCode != http.StatusBadRequest {
			t.Errorf("%q: status %d, want 400", q, res.StatusCode)
		}
	}
	req, _ := http.NewRequest("POST", ts.url+configwatch.Path, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(res.Header.Get("Allow"), "GET") {
		t.Errorf("POST: status %d, Allow %q", res.StatusCode, res.Header.Get("Allow"))
	}
}

func TestGzipWhenAccepted(t *testing.T) {
	ts := startServer(t, Options{Token: testToken})
	v := ts.Publish(scaleConfig(100))
	plainRes, plain := ts.get(t, "")
	if plainRes.Header.Get("Content-Encoding") != "" {
		t.Fatalf("identity asked, got %q", plainRes.Header.Get("Content-Encoding"))
	}
	for _, ae := range []string{"gzip", "br;q=1, gzip;q=0.5", "*", "x-gzip"} {
		res, body := ts.get(t, "", "Accept-Encoding", ae)
		if res.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(res.Header.Get("Vary"), "Accept-Encoding") {
			t.Fatalf("%q: Content-Encoding %q, Vary %q", ae, res.Header.Get("Content-Encoding"), res.Header.Get("Vary"))
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		unzipped, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(unzipped, plain) {
			t.Fatalf("%q: the gzip body is not the document", ae)
		}
		if len(body) >= len(plain)/4 {
			t.Errorf("%q: gzip of %d bytes is %d bytes", ae, len(plain), len(body))
		}
	}
	// Compressed once per version, whoever asks.
	d := ts.shared.current()
	first, again := d.gzipped(), d.gzipped()
	if d.version != v || &first[0] != &again[0] {
		t.Error("the gzip body is made again")
	}
	// Go's client asks for gzip by itself and decompresses.
	req, _ := http.NewRequest("GET", ts.url+configwatch.Path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !res.Uncompressed || !bytes.Equal(body, plain) {
		t.Errorf("net/http client: uncompressed %v, same document %v", res.Uncompressed, bytes.Equal(body, plain))
	}
}
