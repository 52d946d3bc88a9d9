package proxycmd

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
)

// The size flags take bytes or KiB, MiB and GiB, print what they took
// the same way, and refuse anything else.
func TestSizeFlags(t *testing.T) {
	f, code, done := parseFlags("proxy", []string{"-config", "x.json", "-request-buffer", "256KiB", "-buffer-memory", "3000"}, io.Discard)
	if done {
		t.Fatalf("parse: exit %d", code)
	}
	if f.requestBuffer != 256<<10 || f.bufferMemory != 3000 {
		t.Errorf("got %d and %d bytes", f.requestBuffer, f.bufferMemory)
	}
	if s := f.requestBuffer.String(); s != "256KiB" {
		t.Errorf("256 KiB printed as %q", s)
	}
	if f, _, _ := parseFlags("proxy", []string{"-config", "x.json"}, io.Discard); f.requestBuffer != 1<<20 || f.bufferMemory != 64<<20 {
		t.Errorf("defaults %v and %v, want 1MiB and 64MiB", &f.requestBuffer, &f.bufferMemory)
	}
	for _, bad := range []string{"0", "-1", "1MB", "1.5MiB", "MiB", "2TiB", "2048GiB"} {
		if _, code, done := parseFlags("proxy", []string{"-config", "x.json", "-request-buffer", bad}, io.Discard); !done || code != 2 {
			t.Errorf("-request-buffer %s: accepted", bad)
		}
	}
}

// The stream flags reach dataplane.StreamOptions, with the proxy's
// defaults where they are not given.
func TestStreamFlags(t *testing.T) {
	f, _, done := parseFlags("proxy", []string{"-config", "x.json", "-stream-handshake-timeout", "3s", "-max-streams", "7"}, io.Discard)
	if done {
		t.Fatal("refused")
	}
	want := dataplane.DefaultStreamOptions()
	want.HandshakeTimeout, want.MaxStreams = 3*time.Second, 7
	if f.streams != want {
		t.Errorf("stream options %+v; want %+v", f.streams, want)
	}
}

// -metrics-detail takes listener (the default) or route, and refuses
// anything else with a message naming both.
func TestMetricsDetailFlag(t *testing.T) {
	if f, _, done := parseFlags("proxy", []string{"-config", "x.json"}, io.Discard); done || observe.Detail(f.metricsDetail) != observe.DetailListener {
		t.Errorf("default: %v", f)
	}
	if f, _, done := parseFlags("proxy", []string{"-config", "x.json", "-metrics-detail", "route"}, io.Discard); done || observe.Detail(f.metricsDetail) != observe.DetailRoute {
		t.Errorf("-metrics-detail route: %v", f)
	}
	var stderr strings.Builder
	if _, code, done := parseFlags("proxy", []string{"-config", "x.json", "-metrics-detail", "rule"}, &stderr); !done || code != 2 {
		t.Errorf("-metrics-detail rule: accepted")
	}
	if msg := stderr.String(); !strings.Contains(msg, `"rule"`) || !strings.Contains(msg, "listener or route") {
		t.Errorf("-metrics-detail rule: %q does not say what it takes", msg)
	}
}
