package translate_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// originPorts are the config's stream routes' origin ports, by
// "Kind ns/name".
func originPorts(t *testing.T, out *translate.Output) map[string]int {
	t.Helper()
	got := map[string]int{}
	seen := map[int]string{}
	for _, r := range out.Config.Routes {
		if !r.Kind.Stream() || r.OriginPort == 0 {
			continue
		}
		name := string(r.Kind) + " " + r.Namespace + "/" + r.Name
		if other, ok := seen[r.OriginPort]; ok {
			t.Fatalf("origin port %d given to %s and %s", r.OriginPort, other, name)
		}
		seen[r.OriginPort] = name
		got[name] = r.OriginPort
	}
	for _, h := range out.Hostnames {
		if s := h.Stream; s != nil && got[s.Route] != s.Port {
			t.Errorf("hostname %s: the tunnel sends it to port %d, %s has %d", h.Name, s.Port, s.Route, got[s.Route])
		}
	}
	return got
}

// A stream route's origin port is its own: routes added (older or
// younger) and deleted leave the others' ports where they were. Routes
// not through a tunnel have none.
func TestStreamOriginPortsStable(t *testing.T) {
	in := loadGolden(t, "streams.yaml")
	before := originPorts(t, translate.Translate(in))
	if len(before) != 4 {
		t.Fatalf("ports %v: want the 4 routes through the tunnel", before)
	}
	if _, ok := before["TCPRoute default/db"]; ok {
		t.Error("TCPRoute default/db is in the cluster only, and got an origin port")
	}

	older := in.TLSRoutes[0].DeepCopy()
	older.Name, older.UID = "added-older", "added-older"
	older.CreationTimestamp = metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	older.Spec.Hostnames = []gwv1.Hostname{"added.example.com"}
	added := *in
	added.TLSRoutes = append(slices.Clone(in.TLSRoutes), older)
	after := originPorts(t, translate.Translate(&added))
	for name, port := range before {
		if after[name] != port {
			t.Errorf("%s: port %d, then %d once an older route was added", name, port, after[name])
		}
	}
	if after["TLSRoute default/added-older"] == 0 {
		t.Error("the route added has no origin port")
	}

	deleted := *in
	deleted.TLSRoutes = slices.DeleteFunc(slices.Clone(in.TLSRoutes), func(r *gwv1.TLSRoute) bool { return r.Name == "first-claim" })
	after = originPorts(t, translate.Translate(&deleted))
	for name, port := range before {
		if name != "TLSRoute default/first-claim" && after[name] != port {
			t.Errorf("%s: port %d, then %d once another route was deleted", name, port, after[name])
		}
	}
}

// An HTTPRoute older than the stream routes that publish its hostnames
// keeps them in the tunnel: the TLSRoutes still take their connections on
// their listener, and say on their DNS condition who holds the hostname.
func TestStreamHostnameHTTPOlder(t *testing.T) {
	in := loadGolden(t, "streams.yaml")
	c := *in
	c.HTTPRoutes = slices.Clone(in.HTTPRoutes)
	web := c.HTTPRoutes[0].DeepCopy()
	web.CreationTimestamp = metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	c.HTTPRoutes[0] = web
	out := translate.Translate(&c)
	for _, h := range out.Hostnames {
		if h.Name == "web.example.com" || h.Name == "late.example.com" {
			if h.Stream != nil || !h.HTTP {
				t.Errorf("%s: %+v, want HTTP alone (the older HTTPRoute's)", h.Name, h)
			}
		}
	}
	for _, name := range []string{"first-claim", "secure"} {
		st := out.TLSRoutes[nsName("default", name)]
		dns := cond(st[0].Conditions, translate.RouteConditionDNSRecords)
		if dns == nil || dns.Reason != translate.DNSReasonClaimedEarlier || !strings.Contains(dns.Message, "HTTPRoute default/web") {
			t.Errorf("TLSRoute %s: DNS condition %+v, want %s naming HTTPRoute default/web", name, dns, translate.DNSReasonClaimedEarlier)
		}
	}
	if st := out.HTTPRoutes[nsName("default", "web")]; cond(st[0].Conditions, translate.RouteConditionDNSRecords) != nil {
		t.Errorf("HTTPRoute web lost a hostname: %+v", st[0].Conditions)
	}
	for _, r := range out.Config.Routes {
		if r.Kind == proxycfg.KindTLS && r.Name == "first-claim" && !slices.Contains(r.Hostnames, "web.example.com") {
			t.Errorf("TLSRoute first-claim no longer takes web.example.com on its listener: %v", r.Hostnames)
		}
	}
}
