package configserver

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
)

// Proxies report their sidecars' tunnel protocol with each request: the
// server lists what the proxies heard from lately report, says when a
// proxy's report is new or changed (not on every request), and forgets
// proxies that stopped asking.
func TestProxiesReportTheirTunnelProtocol(t *testing.T) {
	var calls atomic.Int32
	ts := startServer(t, Options{Token: testToken, MaxWait: 50 * time.Millisecond, OnProxies: func() { calls.Add(1) }})
	ts.Publish(scaleConfig(1))
	report := func(id, protocol string) {
		ts.get(t, "?wait=0s", configwatch.HeaderProxy, id, configwatch.HeaderTunnelProtocol, protocol)
	}
	report("a", "http2")
	report("a", "http2")
	report("b", "quic")
	report("c", "") // reports nothing
	if got := ts.Protocols(); !slices.Equal(got, []string{"http2", "quic"}) {
		t.Errorf("Protocols() = %v", got)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("OnProxies called %d times, want 2 (a new, b new)", n)
	}
	report("b", "http2")
	if got := ts.Protocols(); !slices.Equal(got, []string{"http2"}) {
		t.Errorf("after b moved to http2: %v", got)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("OnProxies called %d times, want 3", n)
	}
	ts.proxies.now = func() time.Time { return time.Now().Add(time.Second) } // 20 × MaxWait later
	if got := ts.Protocols(); len(got) != 0 {
		t.Errorf("proxies silent for 20 × MaxWait still listed: %v", got)
	}
}
