package translate_test

import (
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// The Cloudflare sync's report becomes statuses: the tunnel's hostname on
// the Gateway, Programmed only once the ingress document is applied, a
// refused configuration on the class, and the DNS condition on routes.
func TestTunnelStateInStatuses(t *testing.T) {
	route, gw := nsName("default", "app"), nsName("default", "web")
	cases := []struct {
		name  string
		state *translate.TunnelState
		check func(t *testing.T, out *translate.Output)
	}{
		{"no tunnel state: no tunnel address, no DNS condition", nil, func(t *testing.T, out *translate.Output) {
			st := out.Gateways[gw]
			if len(st.Addresses) != 1 || st.Addresses[0].Value != "tunnel-id.cfargotunnel.com" {
				t.Errorf("addresses %+v, want only the common one", st.Addresses)
			}
			if c := cond(out.HTTPRoutes[route][0].Conditions, translate.RouteConditionDNSRecords); c != nil {
				t.Errorf("DNS condition %+v without DNS management", c)
			}
		}},
		{"applied, records ready", &translate.TunnelState{ID: "abc", DNS: map[string]translate.DNSState{"app.example.com": {Ready: true}}},
			func(t *testing.T, out *translate.Output) {
				st := out.Gateways[gw]
				if len(st.Addresses) != 2 || st.Addresses[0].Value != "abc.cfargotunnel.com" || *st.Addresses[0].Type != gwv1.HostnameAddressType {
					t.Errorf("addresses %+v, want the tunnel's hostname first", st.Addresses)
				}
				wantCond(t, st.Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
				c := wantCond(t, out.HTTPRoutes[route][0].Conditions, translate.RouteConditionDNSRecords, metav1.ConditionTrue, translate.DNSReasonReady)
				if c != nil && c.Message != "CNAME records point app.example.com at the tunnel" {
					t.Errorf("message %q", c.Message)
				}
			}},
		{"load balanced, the load balancer's", &translate.TunnelState{ID: "abc", DNS: map[string]translate.DNSState{"app.example.com": {Ready: true, LoadBalanced: true}}},
			func(t *testing.T, out *translate.Output) {
				c := wantCond(t, out.HTTPRoutes[route][0].Conditions, translate.RouteConditionDNSRecords, metav1.ConditionTrue, translate.DNSReasonReady)
				if c != nil && c.Message != "a Cloudflare load balancer (LoadBalancingPolicy) answers for app.example.com, with no CNAME record to the tunnel" {
					t.Errorf("message %q: a load balanced hostname has no CNAME to the tunnel", c.Message)
				}
			}},
		{"document not applied yet", &translate.TunnelState{ID: "abc", Pending: "Cloudflare API: 503, retrying in 4s"},
			func(t *testing.T, out *translate.Output) {
				c := wantCond(t, out.Gateways[gw].Conditions, "Programmed", metav1.ConditionFalse, "Pending")
				if c != nil && !strings.Contains(c.Message, "503") {
					t.Errorf("Programmed message %q does not say why", c.Message)
				}
			}},
		{"credentials refused", &translate.TunnelState{Problem: "the API token was refused (403)"},
			func(t *testing.T, out *translate.Output) {
				wantCond(t, out.GatewayClasses["tunnelgate"].Status.Conditions, "Accepted", metav1.ConditionFalse, "InvalidParameters")
				wantCond(t, out.Gateways[gw].Conditions, "Accepted", metav1.ConditionFalse, "")
				if len(out.Hostnames) != 0 {
					t.Errorf("hostnames %+v published by a class that is not accepted", out.Hostnames)
				}
			}},
		{"no rotation asked: no rotation condition", &translate.TunnelState{ID: "abc"},
			func(t *testing.T, out *translate.Output) {
				if c := cond(out.GatewayClasses["tunnelgate"].Status.Conditions, translate.ClassConditionCredentialRotated); c != nil {
					t.Errorf("%+v on a class that asks no rotation", c)
				}
			}},
		{"rotated, on a schedule", &translate.TunnelState{ID: "abc", Rotation: translate.RotationState{Asked: true,
			Last: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Next: time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)}},
			func(t *testing.T, out *translate.Output) {
				c := wantCond(t, out.GatewayClasses["tunnelgate"].Status.Conditions, translate.ClassConditionCredentialRotated, metav1.ConditionTrue, translate.RotationReasonRotated)
				if c != nil && (!strings.Contains(c.Message, "last rotated at 2026-03-01T12:00:00Z") || !strings.Contains(c.Message, "next rotation due at 2026-03-31T12:00:00Z")) {
					t.Errorf("message %q does not say when", c.Message)
				}
			}},
		{"asked, not yet rotated, on demand alone", &translate.TunnelState{ID: "abc", Rotation: translate.RotationState{Asked: true}},
			func(t *testing.T, out *translate.Output) {
				c := wantCond(t, out.GatewayClasses["tunnelgate"].Status.Conditions, translate.ClassConditionCredentialRotated, metav1.ConditionFalse, translate.RotationReasonNotYet)
				if c != nil && (!strings.Contains(c.Message, "never rotated") || !strings.Contains(c.Message, "on demand only")) {
					t.Errorf("message %q", c.Message)
				}
			}},
		{"a schedule, before its Secret is written", &translate.TunnelState{ID: "abc", Rotation: translate.RotationState{Asked: true, Every: 720 * time.Hour}},
			func(t *testing.T, out *translate.Output) {
				c := wantCond(t, out.GatewayClasses["tunnelgate"].Status.Conditions, translate.ClassConditionCredentialRotated, metav1.ConditionFalse, translate.RotationReasonNotYet)
				if c != nil && !strings.Contains(c.Message, "rotated every 720h0m0s, counted from when the token Secret is first written") {
					t.Errorf("message %q", c.Message)
				}
			}},
		{"rotation failing", &translate.TunnelState{ID: "abc", Rotation: translate.RotationState{Asked: true, Failed: "Cloudflare API: 503"}},
			func(t *testing.T, out *translate.Output) {
				c := wantCond(t, out.GatewayClasses["tunnelgate"].Status.Conditions, translate.ClassConditionCredentialRotated, metav1.ConditionFalse, translate.RotationReasonFailed)
				if c != nil && !strings.Contains(c.Message, "503") {
					t.Errorf("message %q does not say why", c.Message)
				}
				wantCond(t, out.GatewayClasses["tunnelgate"].Status.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
			}},
		{"rotation refused", &translate.TunnelState{ID: "abc", Rotation: translate.RotationState{Asked: true, Refused: "tunnelgate does not write this tunnel's token"}},
			func(t *testing.T, out *translate.Output) {
				c := wantCond(t, out.GatewayClasses["tunnelgate"].Status.Conditions, translate.ClassConditionCredentialRotated, metav1.ConditionFalse, translate.RotationReasonNotManaged)
				if c != nil && !strings.Contains(c.Message, "does not write") {
					t.Errorf("message %q does not say why", c.Message)
				}
			}},
		{"a foreign record", &translate.TunnelState{ID: "abc", DNS: map[string]translate.DNSState{"app.example.com": {
			Reason: translate.DNSReasonForeignRecord, Message: "A record app.example.com → 192.0.2.1 is not ours"}}},
			func(t *testing.T, out *translate.Output) {
				c := wantCond(t, out.HTTPRoutes[route][0].Conditions, translate.RouteConditionDNSRecords, metav1.ConditionFalse, translate.DNSReasonForeignRecord)
				if c != nil && !strings.Contains(c.Message, "192.0.2.1") {
					t.Errorf("message %q does not name the record", c.Message)
				}
				wantCond(t, out.HTTPRoutes[route][0].Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
			}},
		{"not synced yet", &translate.TunnelState{ID: "abc", DNS: map[string]translate.DNSState{}},
			func(t *testing.T, out *translate.Output) {
				wantCond(t, out.HTTPRoutes[route][0].Conditions, translate.RouteConditionDNSRecords, metav1.ConditionUnknown, translate.DNSReasonPending)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := loadGolden(t, "basic.yaml")
			if tc.state != nil {
				in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": tc.state}
			}
			out := translate.Translate(in)
			accepted := tc.state == nil || tc.state.Problem == ""
			if accepted && (len(out.Hostnames) != 1 || out.Hostnames[0].Name != "app.example.com" || len(out.Hostnames[0].Classes) != 1 || out.Hostnames[0].Classes[0] != "tunnelgate") {
				t.Errorf("hostnames %+v, want app.example.com of class tunnelgate", out.Hostnames)
			}
			tc.check(t, out)
		})
	}
}

// A new TunnelState invalidates what the Cache kept: the same input with a
// changed report gives what a cold translation gives.
func TestTunnelStateAndCache(t *testing.T) {
	in, cache := loadGolden(t, "basic.yaml"), translate.NewCache()
	in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "abc", Pending: "applying"}}
	cache.Translate(in)
	in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "abc"}}
	warm := cache.Translate(in)
	cold := translate.Translate(in)
	wantCond(t, warm.Gateways[nsName("default", "web")].Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
	if d := translate.Diff(cold, warm); !d.Empty() {
		t.Errorf("warm and cold translations differ: %+v", d)
	}
}

// The Cache compares reported states by value: a new report that says
// the same is the same, whatever its address, and one that differs in any
// field differs.
func TestTunnelStateAndCacheByValue(t *testing.T) {
	in, cache := loadGolden(t, "basic.yaml"), translate.NewCache()
	in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "abc", DNS: map[string]translate.DNSState{}}}
	writeBackAll(&in.Snapshot, cache.Translate(in))
	cache.Translate(in)
	in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "abc", DNS: map[string]translate.DNSState{}}}
	cache.Translate(in)
	if reused, translated := cache.Stats(); !translate.Patched(cache) || translated != 0 || reused == 0 {
		t.Errorf("an equal TunnelState at another address: patched %v, %d routes reused, %d translated; want all reused",
			translate.Patched(cache), reused, translated)
	}
	in.Tunnels["tunnelgate"] = &translate.TunnelState{ID: "abc"} // DNS no longer managed
	cache.Translate(in)
	if translate.Patched(cache) {
		t.Error("a TunnelState whose DNS became nil was taken as unchanged")
	}
}

// RotationState.Equal compares every field.
func TestRotationStateEqual(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i, o := range []translate.RotationState{{Asked: true}, {Last: at}, {Every: time.Hour}, {Next: at}, {Failed: "x"}, {Refused: "x"}} {
		if o.Equal(translate.RotationState{}) {
			t.Errorf("case %d: %+v is taken as the zero state", i, o)
		}
	}
	if !(translate.RotationState{Last: at}).Equal(translate.RotationState{Last: at.In(time.FixedZone("x", 3600))}) {
		t.Error("one instant in two zones is taken as two")
	}
}

// Equal compares every field of a TunnelState and a PlaneState.
func TestReportedStatesEqual(t *testing.T) {
	for _, zero := range []any{&translate.TunnelState{}, &translate.PlaneState{}} {
		v := reflect.ValueOf(zero).Elem()
		for i := range v.NumField() {
			other := reflect.New(v.Type())
			f := other.Elem().Field(i)
			switch f.Kind() {
			case reflect.String:
				f.SetString("x")
			case reflect.Bool:
				f.SetBool(true)
			case reflect.Int32:
				f.SetInt(1)
			case reflect.Map:
				f.Set(reflect.MakeMap(f.Type())) // empty, not nil
			case reflect.Pointer:
				f.Set(reflect.New(f.Type().Elem()))
			case reflect.Struct:
				if f.Type() != reflect.TypeFor[translate.RotationState]() {
					t.Fatalf("%s.%s: a struct field; teach this test to set it", v.Type().Name(), v.Type().Field(i).Name)
				}
				f.Set(reflect.ValueOf(translate.RotationState{Asked: true}))
			default:
				t.Fatalf("%s.%s: a field of kind %s; teach this test to set it", v.Type().Name(), v.Type().Field(i).Name, f.Kind())
			}
			equal := reflect.ValueOf(zero).MethodByName("Equal")
			if equal.Call([]reflect.Value{other})[0].Bool() {
				t.Errorf("%s.Equal does not compare %s", v.Type().Name(), v.Type().Field(i).Name)
			}
		}
	}
}

func wantCond(t *testing.T, list []metav1.Condition, typ string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	c := cond(list, typ)
	if c == nil {
		t.Errorf("no %s condition in %+v", typ, list)
		return nil
	}
	if c.Status != status || reason != "" && c.Reason != reason {
		t.Errorf("%s is %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
	return c
}

// A GRPCRoute through a tunnel whose cloudflared runs another protocol
// than http2 is not accepted, with the fix in the message; HTTPRoutes and
// classes without a tunnel are not affected.
func TestGRPCNeedsHTTP2Tunnel(t *testing.T) {
	grpcRoute, httpRoute := nsName("default", "methods"), nsName("default", "http-own")
	for _, tc := range []struct {
		name      string
		tunnel    bool
		protocols []string
		accepted  bool
	}{
		{"http2", true, []string{"http2"}, true},
		{"no proxy reported yet", true, nil, true},
		{"one proxy on quic", true, []string{"http2", "quic"}, false},
		{"no tunnel: protocols do not matter", false, []string{"quic"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := loadGolden(t, "grpcroute.yaml")
			if tc.tunnel {
				in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "abc"}}
			}
			in.TunnelProtocols = tc.protocols
			out := translate.Translate(in)
			if tc.accepted {
				wantCond(t, out.GRPCRoutes[grpcRoute][0].Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
			} else {
				c := wantCond(t, out.GRPCRoutes[grpcRoute][0].Conditions, "Accepted", metav1.ConditionFalse, "UnsupportedProtocol")
				if c != nil && !strings.Contains(c.Message, "--protocol http2") {
					t.Errorf("message %q does not say the fix", c.Message)
				}
			}
			wantCond(t, out.HTTPRoutes[httpRoute][0].Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
		})
	}
}

// A Gateway with its own plane is Programmed once its own tunnel's
// document is applied and a proxy of its plane is ready; until then the
// reason says what it waits for, and a problem the cluster reports (a
// quota, an image) is told once as a Warning event. Its addresses are its
// own tunnel's hostname.
func TestPlaneStateInStatuses(t *testing.T) {
	gw := nsName("default", "team-a")
	tunnelKey := translate.PlaneTunnelKey("tunnelgate", gw)
	applied := &translate.TunnelState{ID: "own"}
	quota := &translate.PlaneState{Replicas: 2, Problem: `FailedCreate: pods "x" is forbidden: exceeded quota`, NoResources: true}
	cases := []struct {
		name            string
		tunnel          *translate.TunnelState
		plane           *translate.PlaneState
		status          metav1.ConditionStatus
		reason, message string
		event           bool
	}{
		{"no tunnel yet", nil, nil, metav1.ConditionFalse, "Pending", "own tunnel", false},
		{"the account's tunnels at the limit", &translate.TunnelState{Problem: "account a has 1000 tunnels", NoResources: true}, nil,
			metav1.ConditionFalse, "NoResources", "1000 tunnels", true},
		{"no such tunnel", &translate.TunnelState{Problem: "tunnel x does not exist"}, nil, metav1.ConditionFalse, "Invalid", "does not exist", true},
		{"document pending", &translate.TunnelState{ID: "own", Pending: "Cloudflare API: 503"}, nil, metav1.ConditionFalse, "Pending", "503", false},
		{"no Deployment yet", applied, nil, metav1.ConditionFalse, "Pending", "Deployment", false},
		{"no proxy ready", applied, &translate.PlaneState{Replicas: 2}, metav1.ConditionFalse, "Pending", "0 of 2", false},
		{"a quota", applied, quota, metav1.ConditionFalse, "NoResources", "exceeded quota", true},
		{"an image", applied, &translate.PlaneState{Replicas: 1, Problem: "ImagePullBackOff: back-off pulling image"}, metav1.ConditionFalse, "Pending", "ImagePullBackOff", true},
		{"ready", applied, &translate.PlaneState{Replicas: 2, Ready: 1}, metav1.ConditionTrue, "Programmed", "1 of 2", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := loadGolden(t, "planes.yaml")
			in.Provisioning = translate.ProvisionPlanes
			in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "class"}}
			if tc.tunnel != nil {
				in.Tunnels[tunnelKey] = tc.tunnel
			}
			if tc.plane != nil {
				in.Planes = map[types.NamespacedName]*translate.PlaneState{gw: tc.plane}
			}
			out := translate.Translate(in)
			wantProgrammed(t, out, gw, tc.status, tc.reason, tc.message)
			events := 0
			for _, e := range out.Events {
				if e.Kind == "Gateway" && e.Name == gw.Name && e.Type == "Warning" && strings.HasPrefix(e.Message, "Programmed: ") {
					events++
				}
			}
			if want := map[bool]int{true: 1}[tc.event]; events != want {
				t.Errorf("%d Warning events for Programmed, want %d: %+v", events, want, out.Events)
			}
			if tc.tunnel != nil && tc.tunnel.ID != "" {
				if a := out.Gateways[gw].Addresses; len(a) == 0 || a[0].Value != tc.tunnel.ID+translate.TunnelHostnameSuffix {
					t.Errorf("addresses %+v: want the Gateway's own tunnel's hostname first", a)
				}
			}
			if tc.event {
				// Told once: written back, the same condition tells nothing.
				in.Gateways = slices.Clone(in.Gateways)
				for i, g := range in.Gateways {
					if g.Namespace == gw.Namespace && g.Name == gw.Name {
						g = g.DeepCopy()
						g.Status = *out.Gateways[gw]
						in.Gateways[i] = g
					}
				}
				for _, e := range translate.Translate(in).Events {
					if e.Name == gw.Name && strings.HasPrefix(e.Message, "Programmed: ") {
						t.Errorf("told again: %+v", e)
					}
				}
			}
		})
	}
}

// A controller that runs no planes refuses a Gateway asking for one,
// saying how to get one; standalone mode serves it as any other.
func TestDedicatedWithoutPlanes(t *testing.T) {
	gw := nsName("default", "team-a")
	in := loadGolden(t, "planes.yaml")
	in.Provisioning = translate.NoPlanes
	out := translate.Translate(in)
	c := wantCond(t, out.Gateways[gw].Conditions, "Accepted", metav1.ConditionFalse, "InvalidParameters")
	if c != nil && !strings.Contains(c.Message, "-planes") {
		t.Errorf("Accepted message %q does not say how to get a plane", c.Message)
	}
	if len(out.Planes) != 0 {
		t.Errorf("planes %v from a controller that runs none", out.Planes)
	}
	in.Provisioning = translate.ServeDedicatedHere
	out = translate.Translate(in)
	wantCond(t, out.Gateways[gw].Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
}

// A Gateway the shared proxies served through its class's tunnel, which
// now asks for a plane, stays on them until a proxy of its plane is
// ready: its listeners in both configs, its hostnames the class's, its
// address the class's tunnel, Programmed saying what it waits for. A
// Gateway new to the cluster never is on them.
func TestMovingOntoAPlane(t *testing.T) {
	gw := nsName("default", "team-a")
	// was sets the Gateway's status as the controller wrote it last.
	was := func(in *translate.Input, conds ...metav1.Condition) {
		for i, g := range in.Gateways {
			if g.Namespace == gw.Namespace && g.Name == gw.Name {
				g = g.DeepCopy()
				g.Status.Conditions = conds
				in.Gateways[i] = g
			}
		}
	}
	programmed := metav1.Condition{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed"}
	dataPlane := func(reason string) metav1.Condition {
		return metav1.Condition{Type: translate.GatewayConditionDataPlane, Status: metav1.ConditionTrue, Reason: reason}
	}
	notReady := &translate.PlaneState{Replicas: 1}
	for _, tc := range []struct {
		name           string
		before         []metav1.Condition
		plane          *translate.PlaneState
		moving         bool
		classHostnames bool
	}{
		{"served by the shared proxies, plane not ready", []metav1.Condition{programmed}, notReady, true, true},
		{"served by the shared proxies, no Deployment yet", []metav1.Condition{programmed}, nil, true, true},
		{"moving, plane not ready", []metav1.Condition{programmed, dataPlane(translate.DataPlaneMoving)}, notReady, true, true},
		{"moving, plane ready", []metav1.Condition{programmed, dataPlane(translate.DataPlaneMoving)}, &translate.PlaneState{Replicas: 1, Ready: 1}, false, false},
		{"on its plane, which lost its proxies", []metav1.Condition{programmed, dataPlane(translate.DataPlaneDedicated)}, notReady, false, false},
		{"new, plane not ready", nil, notReady, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := loadGolden(t, "planes.yaml")
			in.Gateways = slices.Clone(in.Gateways)
			in.Provisioning = translate.ProvisionPlanes
			in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "class"}, translate.PlaneTunnelKey("tunnelgate", gw): {ID: "own"}}
			was(in, tc.before...)
			if tc.plane != nil {
				in.Planes = map[types.NamespacedName]*translate.PlaneState{gw: tc.plane}
			}
			out := translate.Translate(in)
			p := out.Planes[gw]
			if p == nil || p.Moving != tc.moving {
				t.Fatalf("plane %+v, want Moving %v", p, tc.moving)
			}
			shared, planes := out.ProxyConfigs()
			inShared := slices.Contains(listenerNames(shared), "default/team-a/http")
			if inShared != tc.moving || !slices.Contains(listenerNames(planes[gw]), "default/team-a/http") {
				t.Errorf("team-a's listener in the shared config: %v, in its plane's: %v; want %v, true",
					inShared, listenerNames(planes[gw]), tc.moving)
			}
			sharedRoute := slices.ContainsFunc(shared.Routes, func(r proxycfg.Route) bool { return r.Name == "team-a-only" })
			if sharedRoute != tc.moving {
				t.Errorf("team-a's route in the shared config: %v, want %v", sharedRoute, tc.moving)
			}
			classHas := slices.ContainsFunc(out.Hostnames, func(h translate.Hostname) bool { return h.Name == "www.a.example.com" })
			if classHas != tc.classHostnames || classHas == (len(p.Hostnames) > 0) {
				t.Errorf("www.a.example.com the class's: %v, the plane's: %v; want the class's %v", classHas, p.Hostnames, tc.classHostnames)
			}
			st := out.Gateways[gw]
			c := cond(st.Conditions, "Programmed")
			wantAddr := "own" + translate.TunnelHostnameSuffix
			wantDataPlane := translate.DataPlaneDedicated
			if tc.moving {
				wantAddr, wantDataPlane = "class"+translate.TunnelHostnameSuffix, translate.DataPlaneMoving
				if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "until its own data plane is ready") {
					t.Errorf("Programmed %+v: want True, saying it waits for its plane", c)
				}
			}
			wantCond(t, st.Conditions, translate.GatewayConditionDataPlane, metav1.ConditionTrue, wantDataPlane)
			if len(st.Addresses) == 0 || st.Addresses[0].Value != wantAddr {
				t.Errorf("addresses %+v, want %s first", st.Addresses, wantAddr)
			}
		})
	}
}

func listenerNames(cfg *proxycfg.Config) []string {
	var out []string
	for _, l := range cfg.Listeners {
		out = append(out, l.Name)
	}
	return out
}

// A plane without a tunnel of its own serves in the cluster: it is
// Programmed once a proxy is ready and its Service has a ClusterIP, which
// is then its one address (not the shared proxies' nor any tunnel's); with
// an address pool, the pool's address is its address, and its Service's
// ClusterIP to be.
func TestInClusterPlane(t *testing.T) {
	gw := nsName("default", "internal")
	cases := []struct {
		name    string
		plane   *translate.PlaneState
		pool    bool
		status  metav1.ConditionStatus
		reason  string
		message string
		address string
	}{
		{"no Deployment yet", nil, false, metav1.ConditionFalse, "Pending", "Deployment", ""},
		{"no proxy ready", &translate.PlaneState{Replicas: 1, ServiceIP: "10.96.0.9"}, false, metav1.ConditionFalse, "Pending", "0 of 1", "10.96.0.9"},
		{"no ClusterIP yet", &translate.PlaneState{Replicas: 1, Ready: 1}, false, metav1.ConditionFalse, "Pending", "Service", ""},
		{"ready", &translate.PlaneState{Replicas: 1, Ready: 1, ServiceIP: "10.96.0.9"}, false, metav1.ConditionTrue, "Programmed", "in the cluster", "10.96.0.9"},
		{"ready, from the pool", &translate.PlaneState{Replicas: 1, Ready: 1, ServiceIP: "10.96.0.1"}, true, metav1.ConditionTrue, "Programmed", "in the cluster", "10.96.0.1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := loadGolden(t, "planes.yaml")
			in.Provisioning = translate.ProvisionPlanes
			if tc.pool {
				in.AddressPool = netip.MustParsePrefix("10.96.0.0/28")
			}
			if tc.plane != nil {
				in.Planes = map[types.NamespacedName]*translate.PlaneState{gw: tc.plane}
			}
			out := translate.Translate(in)
			wantProgrammed(t, out, gw, tc.status, tc.reason, tc.message)
			var got []string
			for _, a := range out.Gateways[gw].Addresses {
				got = append(got, a.Value)
			}
			if want := []string{tc.address}; tc.address == "" && len(got) != 0 || tc.address != "" && !slices.Equal(got, want) {
				t.Errorf("addresses %v, want %q alone", got, tc.address)
			}
			p := out.Planes[gw]
			if p == nil {
				t.Fatal("not a plane")
			}
			if want := []translate.PlanePort{{Port: 80, Protocol: "HTTP"}, {Port: 443, Protocol: "HTTPS"}, {Port: 8080, Protocol: "HTTP"}}; !slices.Equal(p.Ports, want) {
				t.Errorf("ports %+v, want %+v", p.Ports, want)
			}
			_, configs := out.ProxyConfigs()
			for _, l := range configs[gw].Listeners {
				if (l.Protocol == "HTTPS") != (len(l.Certificates) > 0) {
					t.Errorf("listener %s (%s) has %d certificates; the plane terminates TLS of HTTPS listeners only", l.Name, l.Protocol, len(l.Certificates))
				}
			}
			if tc.pool != p.Address.IsValid() || tc.pool && p.Address.String() != tc.address {
				t.Errorf("plane address %v; want the pool's %q", p.Address, tc.address)
			}
		})
	}
}

// A hostname published through two tunnels is held by the oldest route's;
// when that route goes, the next oldest takes it, and a Cache agrees.
func TestHostnameClaimPassesOn(t *testing.T) {
	in := loadGolden(t, "claims.yaml")
	cache := translate.NewCache()
	holders := func(out *translate.Output, host string) []string {
		for _, h := range out.Hostnames {
			if h.Name == host {
				return h.Classes
			}
		}
		return nil
	}
	east := nsName("default", "shop-east")
	for _, out := range []*translate.Output{translate.Translate(in), cache.Translate(in)} {
		if got := holders(out, "shop.example.com"); !slices.Equal(got, []string{"manual", "west"}) {
			t.Fatalf("shop.example.com published by %v, want manual (no claim) and west (the oldest)", got)
		}
		if c := cond(out.HTTPRoutes[east][0].Conditions, translate.RouteConditionDNSRecords); c == nil ||
			c.Reason != translate.DNSReasonClaimedEarlier || !strings.Contains(c.Message, "HTTPRoute default/shop-west,") {
			t.Fatalf("shop-east's DNS condition %+v: want ClaimedByOlderRoute naming shop-west", c)
		}
	}
	in.HTTPRoutes = slices.DeleteFunc(slices.Clone(in.HTTPRoutes), func(r *gwv1.HTTPRoute) bool {
		return r.Name == "shop-west" || r.Name == "shop-west-admin"
	})
	for _, out := range []*translate.Output{translate.Translate(in), cache.Translate(in)} {
		if got := holders(out, "shop.example.com"); !slices.Equal(got, []string{"east", "manual"}) {
			t.Errorf("after shop-west went, shop.example.com published by %v, want east and manual", got)
		}
		if c := cond(out.HTTPRoutes[east][0].Conditions, translate.RouteConditionDNSRecords); c != nil {
			t.Errorf("shop-east holds the hostname now, yet says %+v", c)
		}
	}
}

// wantProgrammed checks a Gateway's Programmed condition: its status,
// reason, and a part of its message.
func wantProgrammed(t *testing.T, out *translate.Output, gw types.NamespacedName, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	c := wantCond(t, out.Gateways[gw].Conditions, "Programmed", status, reason)
	if c != nil && !strings.Contains(c.Message, message) {
		t.Errorf("Programmed message %q does not say %q", c.Message, message)
	}
}
