package configwatch

import (
	"reflect"
	"slices"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane"
)

// sameCluster compares field by field, so it must know every field.
func TestSameClusterCoversEveryField(t *testing.T) {
	for typ, fields := range map[reflect.Type][]string{
		reflect.TypeFor[dataplane.Cluster]():     {"Name", "Protocol", "Endpoints", "TLS"},
		reflect.TypeFor[dataplane.Endpoint]():    {"Address"}, // compared with == by slices.Equal
		reflect.TypeFor[dataplane.TLSSettings](): {"SNI", "CAPEM", "SANDNSNames", "SANURIs", "ClientCertPEM", "ClientKeyPEM", "H2"},
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
	base := func() dataplane.Cluster {
		return dataplane.Cluster{Name: "c", Protocol: dataplane.ProtoTLS, Endpoints: []dataplane.Endpoint{{Address: "10.0.0.1:80"}},
			TLS: &dataplane.TLSSettings{SNI: "s", CAPEM: "ca", SANDNSNames: []string{"a"}, SANURIs: []string{"u"}, ClientCertPEM: "c", ClientKeyPEM: "k", H2: true}}
	}
	a := base()
	for name, edit := range map[string]func(*dataplane.Cluster){
		"name":      func(c *dataplane.Cluster) { c.Name = "d" },
		"protocol":  func(c *dataplane.Cluster) { c.Protocol = dataplane.ProtoH2C },
		"endpoint":  func(c *dataplane.Cluster) { c.Endpoints[0].Address = "10.0.0.2:80" },
		"endpoints": func(c *dataplane.Cluster) { c.Endpoints = append(c.Endpoints, dataplane.Endpoint{Address: "x:1"}) },
		"no TLS":    func(c *dataplane.Cluster) { c.TLS = nil },
		"SNI":       func(c *dataplane.Cluster) { c.TLS.SNI = "t" },
		"CA":        func(c *dataplane.Cluster) { c.TLS.CAPEM = "other" },
		"SAN DNS":   func(c *dataplane.Cluster) { c.TLS.SANDNSNames = []string{"b"} },
		"SAN URI":   func(c *dataplane.Cluster) { c.TLS.SANURIs = nil },
		"cert":      func(c *dataplane.Cluster) { c.TLS.ClientCertPEM = "" },
		"key":       func(c *dataplane.Cluster) { c.TLS.ClientKeyPEM = "" },
		"H2":        func(c *dataplane.Cluster) { c.TLS.H2 = false },
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
	a.Endpoints, b.Endpoints = nil, []dataplane.Endpoint{}
	if !sameCluster(&a, &b) {
		t.Error("nil and empty endpoints differ; the proxy serves them alike")
	}
}
