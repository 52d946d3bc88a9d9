package translate_test

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// withGateways is basic.yaml with its Gateway default/web copied as
// g1, g2, ... (created a minute apart, g1 oldest), each status address
// given in claims.
func withGateways(t *testing.T, claims ...string) *translate.Input {
	t.Helper()
	in := loadGolden(t, "basic.yaml")
	web := in.Gateways[0]
	in.Gateways = nil
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, claim := range claims {
		g := web.DeepCopy()
		g.Name = fmt.Sprintf("g%d", i+1)
		g.CreationTimestamp = metav1.NewTime(base.Add(time.Duration(i) * time.Minute))
		if claim != "" {
			g.Status.Addresses = []gwv1.GatewayStatusAddress{{Type: new(gwv1.IPAddressType), Value: claim}}
		}
		in.Gateways = append(in.Gateways, g)
	}
	return in
}

// addressOf is the first status address of Gateway default/name, or "".
func addressOf(out *translate.Output, name string) string {
	st := out.Gateways[types.NamespacedName{Namespace: "default", Name: name}]
	if st == nil || len(st.Addresses) == 0 || st.Addresses[0].Type == nil || *st.Addresses[0].Type != gwv1.IPAddressType {
		return ""
	}
	return st.Addresses[0].Value
}

// Each Gateway gets its own address from the pool, oldest first, keeps the
// one its status shows, and loses a claimed address only to an older
// Gateway; the network and broadcast addresses are never given.
func TestGatewayAddressesFromPool(t *testing.T) {
	for _, c := range []struct {
		name   string
		pool   string
		claims []string
		want   []string // by Gateway; "" means none
	}{
		{"fresh", "10.9.0.0/29", []string{"", "", ""}, []string{"10.9.0.1", "10.9.0.2", "10.9.0.3"}},
		{"kept", "10.9.0.0/29", []string{"", "10.9.0.5", ""}, []string{"10.9.0.1", "10.9.0.5", "10.9.0.2"}},
		{"older wins a claim", "10.9.0.0/29", []string{"10.9.0.4", "10.9.0.4", ""}, []string{"10.9.0.4", "10.9.0.1", "10.9.0.2"}},
		{"claims outside the pool, network or broadcast", "10.9.0.0/29", []string{"192.0.2.1", "10.9.0.0", "10.9.0.7"}, []string{"10.9.0.1", "10.9.0.2", "10.9.0.3"}},
		{"exhausted", "10.9.0.0/30", []string{"", "", ""}, []string{"10.9.0.1", "10.9.0.2", ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := withGateways(t, c.claims...)
			in.AddressPool = netip.MustParsePrefix(c.pool)
			out := translate.Translate(in)
			for i, want := range c.want {
				name := fmt.Sprintf("g%d", i+1)
				if got := addressOf(out, name); got != want {
					t.Errorf("%s: address %q, want %q", name, got, want)
				}
				st := out.Gateways[types.NamespacedName{Namespace: "default", Name: name}]
				if want == "" {
					wantCond(t, st.Conditions, "Programmed", metav1.ConditionFalse, string(gwv1.GatewayReasonAddressNotAssigned))
				} else {
					wantCond(t, st.Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
				}
			}
			// The config's listeners carry their Gateway's address.
			for _, l := range out.Config.Listeners {
				found := false
				for i, want := range c.want {
					if want != "" && l.Name == fmt.Sprintf("default/g%d/http", i+1) {
						found = true
						if l.Address != want {
							t.Errorf("listener %s: address %q, want %q", l.Name, l.Address, want)
						}
					}
				}
				if !found && l.Address != "" {
					t.Errorf("listener %s has address %q", l.Name, l.Address)
				}
			}
		})
	}
}

// Without a pool nothing changes: no IP address, no address on listeners.
func TestNoPoolNoAddresses(t *testing.T) {
	out := translate.Translate(withGateways(t, "", ""))
	for _, l := range out.Config.Listeners {
		if l.Address != "" || len(l.Certificates) != 0 {
			t.Errorf("listener %s: address %q and %d certificates without a pool", l.Name, l.Address, len(l.Certificates))
		}
	}
	if addressOf(out, "g1") != "" {
		t.Error("an IP address without a pool")
	}
}

// An HTTPS listener on a Gateway with an address carries the pairs of its
// certificateRefs; one whose references do not resolve is not served.
func TestHTTPSListenerCertificatesInConfig(t *testing.T) {
	in := loadGolden(t, "listeners.yaml")
	in.AddressPool = netip.MustParsePrefix("10.9.0.0/24")
	out := translate.Translate(in)
	var ok bool
	for _, l := range out.Config.Listeners {
		if l.Protocol != "HTTPS" {
			continue
		}
		if l.Address == "" || len(l.Certificates) == 0 || l.Certificates[0].Cert == "" || l.Certificates[0].Key == "" {
			t.Errorf("HTTPS listener %s: address %q, %d certificates", l.Name, l.Address, len(l.Certificates))
		}
		ok = ok || l.Name == "default/tls/ok"
	}
	if !ok {
		t.Errorf("the listener with a good certificate is not in the config: %+v", out.Config.Listeners)
	}
}

// spec.addresses: a Gateway asking for an address by value gets it when
// it is a usable address of the pool no older Gateway asked for, even if
// a younger Gateway's status holds it; without a value it gets one from
// the pool like any other; otherwise it is not Programmed, and says why.
func TestGatewayStaticAddresses(t *testing.T) {
	ip := func(v string) gwv1.GatewaySpecAddress {
		return gwv1.GatewaySpecAddress{Type: new(gwv1.IPAddressType), Value: v}
	}
	for _, c := range []struct {
		name   string
		claims []string                    // status addresses, by Gateway
		asks   [][]gwv1.GatewaySpecAddress // spec.addresses, by Gateway
		want   []string                    // address, or the Programmed=False reason
	}{
		{"static", []string{"", ""}, [][]gwv1.GatewaySpecAddress{nil, {ip("10.9.0.5")}}, []string{"10.9.0.1", "10.9.0.5"}},
		{"static beats a younger claim", []string{"", "10.9.0.1"}, [][]gwv1.GatewaySpecAddress{{ip("10.9.0.1")}, nil}, []string{"10.9.0.1", "10.9.0.2"}},
		{"static beats an older claim", []string{"10.9.0.3", ""}, [][]gwv1.GatewaySpecAddress{nil, {ip("10.9.0.3")}}, []string{"10.9.0.1", "10.9.0.3"}},
		{"older static wins", []string{"", ""}, [][]gwv1.GatewaySpecAddress{{ip("10.9.0.4")}, {ip("10.9.0.4")}}, []string{"10.9.0.4", "AddressNotUsable"}},
		{"outside the pool", []string{""}, [][]gwv1.GatewaySpecAddress{{ip("192.0.2.1")}}, []string{"AddressNotUsable"}},
		{"the network address", []string{""}, [][]gwv1.GatewaySpecAddress{{ip("10.9.0.0")}}, []string{"AddressNotUsable"}},
		{"without a value", []string{"", ""}, [][]gwv1.GatewaySpecAddress{nil, {{Type: new(gwv1.IPAddressType)}}}, []string{"10.9.0.1", "10.9.0.2"}},
		{"two addresses", []string{""}, [][]gwv1.GatewaySpecAddress{{ip("10.9.0.2"), ip("10.9.0.3")}}, []string{"AddressNotUsable"}},
		{"static before the lowest free", []string{"", ""}, [][]gwv1.GatewaySpecAddress{nil, {ip("10.9.0.1")}}, []string{"10.9.0.2", "10.9.0.1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := withGateways(t, c.claims...)
			for i, a := range c.asks {
				in.Gateways[i].Spec.Addresses = a
			}
			in.AddressPool = netip.MustParsePrefix("10.9.0.0/29")
			out := translate.Translate(in)
			for i, want := range c.want {
				name := fmt.Sprintf("g%d", i+1)
				st := out.Gateways[types.NamespacedName{Namespace: "default", Name: name}]
				wantCond(t, st.Conditions, "Accepted", metav1.ConditionTrue, "")
				if _, err := netip.ParseAddr(want); err == nil {
					if got := addressOf(out, name); got != want {
						t.Errorf("%s: address %q, want %q", name, got, want)
					}
					wantCond(t, st.Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
					continue
				}
				if got := addressOf(out, name); got != "" {
					t.Errorf("%s: address %q, want none", name, got)
				}
				wantCond(t, st.Conditions, "Programmed", metav1.ConditionFalse, want)
			}
		})
	}
}

// Address types other than IPAddress, and values that are not IP
// addresses, are not accepted.
func TestGatewayUnsupportedAddresses(t *testing.T) {
	for _, a := range []gwv1.GatewaySpecAddress{
		{Type: new(gwv1.HostnameAddressType), Value: "gw.example.com"},
		{Type: new(gwv1.AddressType("test/fake-invalid-type")), Value: "fake"},
		{Value: "not an address"},
	} {
		in := withGateways(t, "")
		in.Gateways[0].Spec.Addresses = []gwv1.GatewaySpecAddress{a}
		in.AddressPool = netip.MustParsePrefix("10.9.0.0/29")
		out := translate.Translate(in)
		st := out.Gateways[types.NamespacedName{Namespace: "default", Name: "g1"}]
		wantCond(t, st.Conditions, "Accepted", metav1.ConditionFalse, string(gwv1.GatewayReasonUnsupportedAddress))
	}
}
