package cloudflare_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/test/cffake"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

const (
	token   = "cf-test-token-must-never-be-logged"
	account = "acc1"
)

// world is a fake Cloudflare with one account and two zones, and a
// Syncer pointed at it.
type world struct {
	f      *cffake.Fake
	s      *cloudflare.Syncer
	logs   *testproc.SyncBuffer
	tokens sync.Map // "ns/name/key" → token saved
	stamps sync.Map // "ns/name/key" → the cloudflare.Stamp saved with it
	cancel context.CancelFunc
	done   chan struct{}
}

func newWorld(t *testing.T, opts cloudflare.Options) *world {
	t.Helper()
	w := &world{f: cffake.New(cffake.Options{Token: token}), logs: &testproc.SyncBuffer{}, done: make(chan struct{})}
	t.Cleanup(w.f.Close)
	w.f.AddAccount(account, "Test account")
	w.f.AddZone("zone-com", "example.com", account)
	w.f.AddZone("zone-org", "example.org", account)
	w.start(t, opts)
	return w
}

// start runs a Syncer of opts against w's fake, stopped when the test
// ends (or by w.cancel).
func (w *world) start(t *testing.T, opts cloudflare.Options) {
	w.done = make(chan struct{})
	opts.BaseURL = w.f.URL()
	opts.Log = slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.SaveToken = func(_ context.Context, ref v1alpha1.SecretKeyRef, tok string, stamp cloudflare.Stamp) error {
		w.tokens.Store(ref.Namespace+"/"+ref.Name+"/"+ref.Key, tok)
		w.stamps.Store(ref.Namespace+"/"+ref.Name+"/"+ref.Key, stamp)
		return nil
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 20 * time.Millisecond
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 200 * time.Millisecond
	}
	w.s = cloudflare.New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	done := w.done
	go func() { defer close(done); w.s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if strings.Contains(w.logs.String(), token) {
			t.Errorf("the API token appears in the logs:\n%s", w.logs.String())
		}
	})
}

func desired(hosts ...string) cloudflare.Desired {
	d := cloudflare.Desired{Class: "prod", Token: token, Spec: v1alpha1.GatewayClassConfigSpec{
		Tunnel: &v1alpha1.TunnelRef{Name: "prod-tunnel", TokenSecretRef: &v1alpha1.SecretKeyRef{Namespace: "tg", Name: "tunnel", Key: "token"}},
		DNS:    &v1alpha1.DNSSettings{Enabled: true},
	}}
	for _, h := range hosts {
		grpc := strings.HasPrefix(h, "grpc.")
		d.Hostnames = append(d.Hostnames, translate.Hostname{Name: h, HTTP: !grpc, GRPC: grpc, Classes: []string{"prod"}})
	}
	return d
}

// waitState waits for the class's report to satisfy ok.
func (w *world) waitState(t *testing.T, what string, ok func(*translate.TunnelState) bool) *translate.TunnelState {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := w.s.States()["prod"]
		if st != nil && ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10s; state %+v; log:\n%s", what, st, w.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// records maps "TYPE name" to content in a zone.
func (w *world) records(zone string) map[string]string {
	out := map[string]string{}
	for _, r := range w.f.Records(zone) {
		out[r.Type+" "+r.Name] = r.Content
	}
	return out
}

func (w *world) tunnelID(t *testing.T) string {
	t.Helper()
	for _, tn := range w.f.Tunnels(account) {
		if tn.Name == "prod-tunnel" && tn.DeletedAt.IsZero() {
			return tn.ID
		}
	}
	t.Fatal("no tunnel prod-tunnel")
	return ""
}

func (w *world) ingress(t *testing.T, id string) []string {
	t.Helper()
	raw, _ := w.f.TunnelConfig(account, id)
	var doc struct {
		Ingress []struct{ Hostname, Service string } `json:"ingress"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("tunnel config %s: %v", raw, err)
	}
	var out []string
	for _, r := range doc.Ingress {
		out = append(out, r.Hostname+"="+r.Service)
	}
	return out
}

// The whole life of a class: a tunnel created by name and its token
// stored, the ingress document and the records written, foreign records
// left alone and reported, a steady state that costs one GET per drift
// check, a removed hostname's records deleted, and a document changed
// behind our back restored.
func TestSyncerLifecycle(t *testing.T) {
	w := newWorld(t, cloudflare.Options{DriftEvery: 300 * time.Millisecond, DNSEvery: time.Hour})
	foreignID := w.f.AddRecord("zone-com", cffake.Record{Type: "A", Name: "taken.example.com", Content: "192.0.2.1", TTL: 1})
	d := desired("app.example.com", "grpc.example.com", "taken.example.com", "shop.example.org", "nowhere.example.net")
	w.s.Update([]cloudflare.Desired{d})
	st := w.waitState(t, "applied with every hostname's DNS state", func(st *translate.TunnelState) bool {
		return st.Pending == "" && st.ID != "" && len(st.DNS) == 5
	})

	id := w.tunnelID(t)
	if st.ID != id || st.Problem != "" {
		t.Errorf("state %+v, want tunnel %s", st, id)
	}
	tok, _ := w.tokens.Load("tg/tunnel/token")
	if raw, err := base64.StdEncoding.DecodeString(fmt.Sprint(tok)); err != nil || !strings.Contains(string(raw), id) {
		t.Errorf("saved tunnel token %v does not name tunnel %s (%v)", tok, id, err)
	}
	wantIngress := []string{"app.example.com=http://localhost:8080", "grpc.example.com=https://localhost:8443",
		"nowhere.example.net=http://localhost:8080", "shop.example.org=http://localhost:8080", "taken.example.com=http://localhost:8080", "=http_status:404"}
	if got := w.ingress(t, id); strings.Join(got, " ") != strings.Join(wantIngress, " ") {
		t.Errorf("ingress %v\nwant    %v", got, wantIngress)
	}
	com, org := w.records("zone-com"), w.records("zone-org")
	target := id + ".cfargotunnel.com"
	for _, h := range []string{"app.example.com", "grpc.example.com"} {
		if com["CNAME "+h] != target || !strings.Contains(com["TXT _tunnelgate."+h], "owner=prod") {
			t.Errorf("%s: records %v", h, com)
		}
	}
	if org["CNAME shop.example.org"] != target {
		t.Errorf("example.org records %v", org)
	}
	if com["A taken.example.com"] != "192.0.2.1" || com["CNAME taken.example.com"] != "" {
		t.Errorf("the foreign record was touched: %v", com)
	}
	for h, reason := range map[string]string{"taken.example.com": translate.DNSReasonForeignRecord, "nowhere.example.net": translate.DNSReasonNoZone} {
		if s := st.DNS[h]; s.Ready || s.Reason != reason {
			t.Errorf("%s: %+v, want %s", h, s, reason)
		}
	}
	if s := st.DNS["taken.example.com"]; !strings.Contains(s.Message, "192.0.2.1") {
		t.Errorf("the foreign record is not named: %q", s.Message)
	}

	// Steady state: the same wish costs nothing; a drift check costs one
	// GET and writes nothing.
	w.f.ResetCalls()
	start := time.Now()
	w.s.Update([]cloudflare.Desired{d})
	time.Sleep(900 * time.Millisecond) // three drift checks
	// At most one check per 300 ms of the time that passed (a sleep may
	// last longer on a busy machine), and one more just begun.
	mostGets := int(time.Since(start)/(300*time.Millisecond)) + 1
	gets := 0
	for _, c := range w.f.Calls() {
		if c.Route != "GET /accounts/{account_id}/cfd_tunnel/{tunnel_id}/configurations" {
			t.Errorf("steady state called %s %s", c.Method, c.Route)
		}
		gets++
	}
	if gets == 0 || gets > mostGets {
		t.Errorf("%d GETs in three drift checks, want at most %d", gets, mostGets)
	}
	t.Logf("steady state: %d calls in 0.9 s with DriftEvery 300 ms, all GETs of the document", gets)

	// A hostname goes: its records and rule go; the foreign record stays.
	d = desired("grpc.example.com", "taken.example.com", "shop.example.org", "nowhere.example.net")
	w.s.Update([]cloudflare.Desired{d})
	w.waitState(t, "app.example.com forgotten", func(st *translate.TunnelState) bool {
		_, ok := st.DNS["app.example.com"]
		return !ok && len(st.DNS) == 4
	})
	com = w.records("zone-com")
	if _, ok := com["CNAME app.example.com"]; ok {
		t.Errorf("CNAME of a removed hostname kept: %v", com)
	}
	if _, ok := com["TXT _tunnelgate.app.example.com"]; ok {
		t.Errorf("ownership record of a removed hostname kept: %v", com)
	}
	if com["A taken.example.com"] != "192.0.2.1" || len(w.f.Records("zone-com")) != 3 {
		t.Errorf("records %v, want grpc's two and the foreign A (%s)", com, foreignID)
	}

	// Someone edits the document in the dashboard: the next drift check
	// puts ours back.
	put(t, w.f.URL()+"accounts/"+account+"/cfd_tunnel/"+id+"/configurations", `{"config":{"ingress":[{"service":"http_status:503"}]}}`)
	deadline := time.Now().Add(5 * time.Second)
	for got := w.ingress(t, id); len(got) != 5; got = w.ingress(t, id) {
		if time.Now().After(deadline) {
			t.Fatalf("document not restored: %v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range w.f.Calls() {
		if c.Method == http.MethodDelete && strings.Contains(c.Route, "cfd_tunnel/{tunnel_id}") && !strings.Contains(c.Route, "dns") {
			t.Errorf("a tunnel was deleted: %+v", c)
		}
	}
}

// A 429 storm in the middle of changes: the Syncer waits as long as
// Retry-After says, does not spin, loses no change, and converges on the
// last wish.
func TestSyncerRateLimitStorm(t *testing.T) {
	w := newWorld(t, cloudflare.Options{})
	w.s.Update([]cloudflare.Desired{desired("a.example.com")})
	w.waitState(t, "first sync", func(st *translate.TunnelState) bool { return st.Pending == "" && st.DNS["a.example.com"].Ready })

	w.f.ResetCalls()
	w.f.Fail(cffake.Fault{Status: http.StatusTooManyRequests, RetryAfter: 300 * time.Millisecond, Times: 4})
	began := time.Now()
	for i := range 20 { // a burst of changes during the storm
		hosts := []string{"a.example.com"}
		for j := range i % 5 {
			hosts = append(hosts, fmt.Sprintf("h%d.example.com", j))
		}
		w.s.Update([]cloudflare.Desired{desired(hosts...)})
		time.Sleep(10 * time.Millisecond)
	}
	final := desired("a.example.com", "b.example.com", "c.example.org")
	w.s.Update([]cloudflare.Desired{final})
	st := w.waitState(t, "converged on the last wish", func(st *translate.TunnelState) bool {
		return len(st.DNS) == 3 && st.DNS["b.example.com"].Ready && st.DNS["c.example.org"].Ready && st.Pending == ""
	})
	took := time.Since(began)
	limited := 0
	for _, c := range w.f.Calls() {
		if c.Status == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited != 4 {
		t.Errorf("%d requests answered 429, want the 4 of the storm", limited)
	}
	// Four 429s, each followed by a wait of at least Retry-After.
	if took < 1200*time.Millisecond {
		t.Errorf("converged after %v: Retry-After (4 × 300 ms) was not honoured", took)
	}
	if n := len(w.f.Calls()); n > 40 {
		t.Errorf("%d calls for one storm and 21 wishes: the Syncer spins", n)
	}
	com := w.records("zone-com")
	for _, h := range []string{"h0", "h1", "h2", "h3"} {
		if _, ok := com["CNAME "+h+".example.com"]; ok {
			t.Errorf("an intermediate wish's record %s is left", h)
		}
	}
	if st.Problem != "" {
		t.Errorf("problem %q after a storm", st.Problem)
	}
}

// backoffAttempts is how many attempts a back-off doubling from least
// to most makes in elapsed, the first at once: 6 in 0.5 s for 20 ms to
// 200 ms (at 0, 20, 60, 140, 300 and 500 ms).
func backoffAttempts(elapsed, least, most time.Duration) int {
	n := 0
	for at, d := time.Duration(0), least; at <= elapsed; at, d = at+d, min(2*d, most) {
		n++
	}
	return n
}

// A refused token is the user's problem: reported on the class, retried
// slowly, and cleared when the token is fixed. A tunnel ID that does not
// exist is reported too. Neither is a reason to spin.
func TestSyncerProblems(t *testing.T) {
	w := newWorld(t, cloudflare.Options{})
	bad := desired("a.example.com")
	bad.Token = "wrong-token"
	start := time.Now()
	w.s.Update([]cloudflare.Desired{bad})
	st := w.waitState(t, "the refusal reported", func(st *translate.TunnelState) bool { return st.Problem != "" })
	if !strings.Contains(st.Problem, "refused the API token") || strings.Contains(st.Problem, "wrong-token") {
		t.Errorf("problem %q", st.Problem)
	}
	time.Sleep(500 * time.Millisecond)
	if n, most := len(w.f.Calls()), backoffAttempts(time.Since(start), 20*time.Millisecond, 200*time.Millisecond); n > most {
		t.Errorf("%d calls with a refused token, want at most %d (back-off 20 ms to 200 ms)", n, most)
	}

	w.s.Update([]cloudflare.Desired{desired("a.example.com")})
	w.waitState(t, "the fixed token works", func(st *translate.TunnelState) bool { return st.Problem == "" && st.Pending == "" && st.ID != "" })

	missing := desired("a.example.com")
	missing.Spec.Tunnel = &v1alpha1.TunnelRef{ID: "00000000-0000-0000-0000-000000000000"}
	w.s.Update([]cloudflare.Desired{missing})
	st = w.waitState(t, "the missing tunnel reported", func(st *translate.TunnelState) bool { return st.Problem != "" })
	if !strings.Contains(st.Problem, "does not exist") {
		t.Errorf("problem %q", st.Problem)
	}
	if len(w.f.Tunnels(account)) != 1 {
		t.Errorf("tunnels %+v: a tunnel given by ID must never be created", w.f.Tunnels(account))
	}
	// A problem is no failure to retry: it waits for a new wish (or the
	// next drift check), without calling Cloudflare in between.
	w.f.ResetCalls()
	time.Sleep(300 * time.Millisecond)
	if n := len(w.f.Calls()); n > 0 {
		t.Errorf("%d calls in 0.3 s for a tunnel that does not exist", n)
	}

	// Hold keeps Cloudflare as it is: no hostnames must not mean "delete".
	held := desired()
	held.Hold = true
	w.s.Update([]cloudflare.Desired{held})
	w.waitState(t, "held", func(st *translate.TunnelState) bool { return st.Problem == "" && st.ID != "" })
	time.Sleep(100 * time.Millisecond)
	if _, ok := w.records("zone-com")["CNAME a.example.com"]; !ok {
		t.Errorf("a held class lost its records: %v", w.records("zone-com"))
	}
}

func put(t *testing.T, url, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("PUT %s: %s", url, res.Status)
	}
}

// A zone whose records the token may not change: its new hostnames say
// so on their routes; the class stays accepted and the rest is applied.
func TestSyncerZoneRefused(t *testing.T) {
	w := newWorld(t, cloudflare.Options{})
	w.f.Fail(cffake.Fault{Match: func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/zones/zone-org/") }, Status: http.StatusForbidden})
	w.s.Update([]cloudflare.Desired{desired("a.example.com", "b.example.org")})
	st := w.waitState(t, "both hostnames reported", func(st *translate.TunnelState) bool {
		return st.DNS["a.example.com"].Ready && st.DNS["b.example.org"].Reason != ""
	})
	if s := st.DNS["b.example.org"]; s.Reason != translate.DNSReasonAPIError || !strings.Contains(s.Message, "DNS: Edit") {
		t.Errorf("b.example.org: %+v", s)
	}
	if st.Problem != "" || st.Pending != "" {
		t.Errorf("a refused zone made the class %q / %q", st.Problem, st.Pending)
	}
}

// A class's sync is a root span linked to the controller sync that asked
// for it, and each API call in it is a child span.
func TestSyncerTraced(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	w := newWorld(t, cloudflare.Options{TracerProvider: tp})
	ctx, cause := tp.Tracer("test").Start(context.Background(), "tunnelgate.sync")
	w.s.UpdateContext(ctx, []cloudflare.Desired{desired("app.example.com")})
	cause.End()
	st := w.waitState(t, "applied", func(st *translate.TunnelState) bool { return st.Pending == "" && len(st.DNS) == 1 })

	var root tracetest.SpanStub
	deadline := time.Now().Add(5 * time.Second)
	for root.Name == "" {
		for _, s := range spans.GetSpans() {
			if s.Name == "tunnelgate.cloudflare.sync" {
				root = s
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no tunnelgate.cloudflare.sync span")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if root.Parent.IsValid() {
		t.Errorf("the class sync has a parent %v; want a root", root.Parent)
	}
	if len(root.Links) != 1 || root.Links[0].SpanContext.SpanID() != cause.SpanContext().SpanID() {
		t.Errorf("links %+v, want the controller sync %v", root.Links, cause.SpanContext().SpanID())
	}
	attrs := map[string]string{}
	for _, kv := range root.Attributes {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	if attrs["tunnelgate.gateway_class"] != "prod" || attrs["tunnelgate.cloudflare.tunnel_id"] != st.ID || attrs["tunnelgate.cloudflare.report_changed"] != "true" {
		t.Errorf("class sync attributes %v", attrs)
	}
	var ops []string
	for _, s := range spans.GetSpans() {
		if s.Parent.SpanID() == root.SpanContext.SpanID() {
			ops = append(ops, s.Name)
		}
	}
	// A tunnel found by name (absent, so created), its token, the
	// document read and written, the zones and records listed and one
	// batch of records.
	want := []string{"cloudflare.account_list", "cloudflare.tunnel_list", "cloudflare.tunnel_create", "cloudflare.tunnel_token_get",
		"cloudflare.tunnel_config_get", "cloudflare.tunnel_config_put", "cloudflare.zone_list", "cloudflare.dns_list", "cloudflare.dns_batch"}
	for _, op := range want {
		if !slices.Contains(ops, op) {
			t.Errorf("no %s span under the class sync; got %v", op, ops)
		}
	}
}

// At Cloudflare's limit of tunnels per account, a tunnel is not created:
// the report says so, as a limit, and nothing was asked to create one.
// With room made, the next look creates it.
func TestSyncerTunnelLimit(t *testing.T) {
	w := newWorld(t, cloudflare.Options{DriftEvery: 100 * time.Millisecond})
	for i := range cloudflare.MaxTunnelsPerAccount {
		w.f.AddTunnel(account, fmt.Sprintf("00000000-0000-4000-8000-%012d", i), fmt.Sprintf("other-%d", i))
	}
	w.s.Update([]cloudflare.Desired{desired("app.example.com")})
	st := w.waitState(t, "the limit reported", func(s *translate.TunnelState) bool { return s.Problem != "" })
	if !st.NoResources || !strings.Contains(st.Problem, "1000 tunnels") {
		t.Errorf("report %+v: want a limit naming the count", st)
	}
	for _, tun := range w.f.Tunnels(account) {
		if tun.Name == "prod-tunnel" {
			t.Fatal("a tunnel was created beyond the limit")
		}
	}
	w.f.DeleteTunnel(account, "00000000-0000-4000-8000-000000000000")
	w.waitState(t, "the tunnel created once there is room", func(s *translate.TunnelState) bool { return s.Problem == "" && s.ID != "" })
}

// A Gateway moving from its class's tunnel to one of its own: the plane
// finds its hostname held by the class, which lets it go a moment later,
// and the plane takes it at its next look (DNSRecheck), long before the
// next full pass (DNSEvery). Moving back, the class takes the plane's
// records over at once once the plane is gone (LivePlanes).
func TestSyncerHostnameMovesBetweenTunnels(t *testing.T) {
	w := newWorld(t, cloudflare.Options{DNSEvery: time.Hour, DNSRecheck: 100 * time.Millisecond})
	class := desired("app.example.com")
	class.LivePlanes = []string{}
	w.s.Update([]cloudflare.Desired{class})
	w.waitState(t, "the class's record", func(s *translate.TunnelState) bool { return s.DNS["app.example.com"].Ready })
	classTunnel := w.tunnelID(t)

	plane := desired("app.example.com")
	plane.Class = "prod/team-a/gw"
	plane.Spec.Tunnel = &v1alpha1.TunnelRef{Name: "team-a"}
	plane.CreateIntent = translate.TunnelIntent{Name: "team-a", Since: time.Now()}
	plane.Spec.DNS = &v1alpha1.DNSSettings{Enabled: true, OwnerID: cloudflare.PlaneOwner("prod", "team-a", "gw")}
	// For a moment both want it (the class's sync has not run yet): the
	// plane finds it held.
	class.LivePlanes = []string{plane.Spec.DNS.OwnerID}
	w.s.Update([]cloudflare.Desired{plane, class})
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := w.s.States()[plane.Class]
		if st != nil && st.DNS["app.example.com"].Reason == translate.DNSReasonOwnedByOther {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the plane never found the hostname held: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	movedClass := desired()
	movedClass.LivePlanes = class.LivePlanes
	w.s.Update([]cloudflare.Desired{plane, movedClass})
	deadline = time.Now().Add(10 * time.Second)
	for {
		st := w.s.States()[plane.Class]
		if st != nil && st.DNS["app.example.com"].Ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the plane never took the hostname: %+v; records %v", st, w.records("zone-com"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := w.records("zone-com")["CNAME app.example.com"]; got == classTunnel+".cfargotunnel.com" || got == "" {
		t.Fatalf("CNAME → %q, want the plane's tunnel", got)
	}

	class.LivePlanes = []string{}
	w.s.Update([]cloudflare.Desired{class}) // the plane gone, the Gateway back on the class
	deadline = time.Now().Add(10 * time.Second)
	for w.records("zone-com")["CNAME app.example.com"] != classTunnel+".cfargotunnel.com" {
		if time.Now().After(deadline) {
			t.Fatalf("the class never took the hostname back: %v", w.records("zone-com"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A GatewayConfig may name any tunnel of the class's account. One that a
// class of this controller already holds is refused to the Gateway: no
// token, no document, a Problem naming the holder. A class that names a
// tunnel a Gateway holds takes it, and the Gateway's token Secret is
// emptied so its cloudflared stops serving it.
func TestSyncerOneTunnelOneHolder(t *testing.T) {
	w := newWorld(t, cloudflare.Options{DNSEvery: time.Hour})
	class := desired("app.example.com")
	w.s.Update([]cloudflare.Desired{class})
	w.waitState(t, "the class's tunnel", func(s *translate.TunnelState) bool { return s.ID != "" && s.Pending == "" })
	classTunnel := w.tunnelID(t)

	thief := desired("steal.example.com")
	thief.Class = "prod/team-b/gw"
	thief.Spec.Tunnel = &v1alpha1.TunnelRef{ID: classTunnel, TokenSecretRef: &v1alpha1.SecretKeyRef{Namespace: "team-b", Name: "gw-prod-tunnel", Key: "token"}}
	thief.Spec.DNS = &v1alpha1.DNSSettings{Enabled: true, OwnerID: cloudflare.PlaneOwner("prod", "team-b", "gw")}
	w.s.Update([]cloudflare.Desired{class, thief})
	st := waitKey(t, w, thief.Class, func(s *translate.TunnelState) bool { return s.Problem != "" })
	if !strings.Contains(st.Problem, "already GatewayClass prod's") {
		t.Errorf("problem %q: want it to name the class holding the tunnel", st.Problem)
	}
	if _, ok := w.tokens.Load("team-b/gw-prod-tunnel/token"); ok {
		t.Error("the Gateway was handed the class's tunnel token")
	}
	if got := w.ingress(t, classTunnel); slices.Contains(got, "steal.example.com") {
		t.Errorf("the class's document %v has the Gateway's hostname", got)
	}

	// The other way round: a Gateway's tunnel first, then a class naming it.
	w2 := newWorld(t, cloudflare.Options{DNSEvery: time.Hour})
	plane := desired("api.example.com")
	plane.Class = "prod/team-a/gw"
	plane.Spec.Tunnel = &v1alpha1.TunnelRef{Name: "team-a", TokenSecretRef: &v1alpha1.SecretKeyRef{Namespace: "team-a", Name: "gw-prod-tunnel", Key: "token"}}
	plane.CreateIntent = translate.TunnelIntent{Name: "team-a", Since: time.Now()}
	plane.Spec.DNS = &v1alpha1.DNSSettings{Enabled: true, OwnerID: cloudflare.PlaneOwner("prod", "team-a", "gw")}
	w2.s.Update([]cloudflare.Desired{plane})
	planeSt := waitKey(t, w2, plane.Class, func(s *translate.TunnelState) bool { return s.ID != "" && s.Pending == "" })
	if tok, _ := w2.tokens.Load("team-a/gw-prod-tunnel/token"); tok == "" || tok == nil {
		t.Fatal("the Gateway's token was not saved")
	}
	takeover := desired("app.example.com")
	takeover.Spec.Tunnel = &v1alpha1.TunnelRef{ID: planeSt.ID, TokenSecretRef: takeover.Spec.Tunnel.TokenSecretRef}
	w2.s.Update([]cloudflare.Desired{takeover, plane})
	st = waitKey(t, w2, plane.Class, func(s *translate.TunnelState) bool { return s.Problem != "" })
	if !strings.Contains(st.Problem, "already GatewayClass prod's") {
		t.Errorf("problem %q: want it to name the class", st.Problem)
	}
	if tok, _ := w2.tokens.Load("team-a/gw-prod-tunnel/token"); tok != "" {
		t.Errorf("the Gateway's token Secret still holds %v; want it emptied", tok)
	}
	waitKey(t, w2, takeover.Class, func(s *translate.TunnelState) bool { return s.ID == planeSt.ID && s.Problem == "" && s.Pending == "" })
}

// waitKey waits for one wish's report to satisfy ok.
func waitKey(t *testing.T, w *world, key string, ok func(*translate.TunnelState) bool) *translate.TunnelState {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := w.s.States()[key]
		if st != nil && ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10s; state %+v; log:\n%s", key, st, w.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A stream hostname goes into the document as its tcp/ssh/rdp rule and
// gets its DNS records as any other; one whose rule cannot be run safely
// (Access without a team name) is left out of the document, so its
// streams meet the catch-all, and the sync says why in the log, while
// the rest of the class is served.
func TestStreamHostnamesSynced(t *testing.T) {
	w := newWorld(t, cloudflare.Options{})
	d := desired("app.example.com")
	d.Hostnames = append(d.Hostnames,
		translate.Hostname{Name: "db.example.com", Classes: []string{"prod"},
			Stream: &translate.StreamService{Route: "TCPRoute default/db", Port: 20000, Scheme: "tcp"}},
		translate.Hostname{Name: "ssh.example.com", Classes: []string{"prod"},
			Stream: &translate.StreamService{Route: "TCPRoute ops/ssh", Port: 20001, Scheme: "ssh",
				Access: &translate.StreamAccess{Audiences: []string{"aud"}}}})
	w.s.Update([]cloudflare.Desired{d})
	w.waitState(t, "document applied", func(st *translate.TunnelState) bool { return st.Pending == "" && st.DNS != nil })
	want := []string{"app.example.com=http://localhost:8080", "db.example.com=tcp://localhost:20000", "=http_status:404"}
	if got := w.ingress(t, w.tunnelID(t)); !slices.Equal(got, want) {
		t.Errorf("ingress %q, want %q", got, want)
	}
	if _, ok := w.records("zone-com")["CNAME db.example.com"]; !ok {
		t.Errorf("no CNAME for the stream hostname: %v", w.records("zone-com"))
	}
	if log := w.logs.String(); !strings.Contains(log, "tunnel ingress rule refused") || !strings.Contains(log, "hostname ssh.example.com (TCPRoute ops/ssh): Access check without a team name") {
		t.Errorf("the refused rule is not in the log:\n%s", log)
	}
}
