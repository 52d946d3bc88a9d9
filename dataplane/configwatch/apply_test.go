package configwatch

import (
	"reflect"
	"slices"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// sameCluster compares field by field, so it must know every field.
func TestSameClusterCoversEveryField(t *testing.T) {
	for typ, fields := range map[reflect.Type][]string{
		reflect.TypeFor[proxycfg.Cluster]():     {"Name", "Protocol", "Endpoints", "TLS"},
		reflect.TypeFor[proxycfg.Endpoint]():    {"Address"}, // compared with == by slices.Equal
		reflect.TypeFor[proxycfg.TLSSettings](): {"SNI", "CAPEM", "SANDNSNames", "SANURIs", "ClientCertPEM", "ClientKeyPEM", "H2"},
	} {
		var got []string
		for f := range typ.Fields() {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, fields) {
			t.Errorf("%s has fields %v; sameCluster compares %v: update it", typ, got, fields)
		}
	}
}

func TestSameCluster(t *testing.T) {
	base := func() proxycfg.Cluster {
		return proxycfg.Cluster{Name: "c", Protocol: proxycfg.ProtoTLS, Endpoints: []proxycfg.Endpoint{{Address: "10.0.0.1:80"}},
			TLS: &proxycfg.TLSSettings{SNI: "s", CAPEM: "ca", SANDNSNames: []string{"a"}, SANURIs: []string{"u"}, ClientCertPEM: "c", ClientKeyPEM: "k", H2: true}}
	}
	a := base()
	for name, edit := range map[string]func(*proxycfg.Cluster){
		"name":      func(c *proxycfg.Cluster) { c.Name = "d" },
		"protocol":  func(c *proxycfg.Cluster) { c.Protocol = proxycfg.ProtoH2C },
		"endpoint":  func(c *proxycfg.Cluster) { c.Endpoints[0].Address = "10.0.0.2:80" },
		"endpoints": func(c *proxycfg.Cluster) { c.Endpoints = append(c.Endpoints, proxycfg.Endpoint{Address: "x:1"}) },
		"no TLS":    func(c *proxycfg.Cluster) { c.TLS = nil },
		"SNI":       func(c *proxycfg.Cluster) { c.TLS.SNI = "t" },
		"CA":        func(c *proxycfg.Cluster) { c.TLS.CAPEM = "other" },
		"SAN DNS":   func(c *proxycfg.Cluster) { c.TLS.SANDNSNames = []string{"b"} },
		"SAN URI":   func(c *proxycfg.Cluster) { c.TLS.SANURIs = nil },
		"cert":      func(c *proxycfg.Cluster) { c.TLS.ClientCertPEM = "" },
		"key":       func(c *proxycfg.Cluster) { c.TLS.ClientKeyPEM = "" },
		"H2":        func(c *proxycfg.Cluster) { c.TLS.H2 = false },
	} {
		b := base()
		edit(&b)
		if sameCluster(&a, &b) || sameCluster(&b, &a) {
			t.Errorf("%s: a change is not seen", name)
		}
	}
	b := base()
	if !sameCluster(&a, &b) {
		t.Error("equal definitions differ")
	}
	a.Endpoints, b.Endpoints = nil, []proxycfg.Endpoint{}
	if !sameCluster(&a, &b) {
		t.Error("nil and empty endpoints differ; the proxy serves them alike")
	}
}
