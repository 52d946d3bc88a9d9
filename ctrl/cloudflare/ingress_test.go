package cloudflare

import (
	"encoding/json"
	"testing"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

func TestBuildDocument(t *testing.T) {
	doc := BuildDocument([]translate.Hostname{
		{Name: "*.example.com", HTTP: true},
		{Name: "grpc.example.com", GRPC: true},
		{Name: "*.api.example.com", HTTP: true},
		{Name: "app.example.com", HTTP: true},
	}, &v1alpha1.OriginSettings{Port: 9080})
	got, _ := json.Marshal(doc)
	want := `{"ingress":[` +
		`{"hostname":"app.example.com","service":"http://localhost:9080"},` +
		`{"hostname":"grpc.example.com","service":"https://localhost:8443","originRequest":{"http2Origin":true,"originServerName":"origin.tunnelgate.internal","caPool":"/etc/tunnelgate/origin-ca/ca.crt"}},` +
		`{"hostname":"*.api.example.com","service":"http://localhost:9080"},` +
		`{"hostname":"*.example.com","service":"http://localhost:9080"},` +
		`{"service":"http_status:404"}]}`
	if string(got) != want {
		t.Errorf("document\n got %s\nwant %s", got, want)
	}
	// With a socket, HTTP hostnames go to it; gRPC ones still to the TLS
	// port.
	doc = BuildDocument([]translate.Hostname{{Name: "app.example.com", HTTP: true}, {Name: "grpc.example.com", GRPC: true}},
		&v1alpha1.OriginSettings{Socket: "/var/run/tunnelgate/origin.sock"})
	if doc.Ingress[0].Service != "unix:/var/run/tunnelgate/origin.sock" || doc.Ingress[1].Service != "https://localhost:8443" {
		t.Errorf("with a socket: %+v; want app on unix:/var/run/tunnelgate/origin.sock and grpc on https://localhost:8443", doc.Ingress)
	}
	if empty := BuildDocument(nil, nil); len(empty.Ingress) != 1 || empty.Ingress[0].Service != catchAll {
		t.Errorf("no hostnames: %+v, want only the catch-all", empty)
	}
}

func TestSameDocument(t *testing.T) {
	want := BuildDocument([]translate.Hostname{{Name: "app.example.com", HTTP: true}}, nil)
	cases := []struct {
		remote string
		same   bool
	}{
		{`{"ingress":[{"hostname":"app.example.com","service":"http://localhost:8080"},{"service":"http_status:404"}]}`, true},
		// Defaults Cloudflare may echo are not differences.
		{`{"ingress":[{"hostname":"app.example.com","service":"http://localhost:8080","originRequest":{}, "path":""},{"service":"http_status:404","originRequest":{}}],"warp-routing":{"enabled":false},"originRequest":{}}`, true},
		{`{"ingress":[{"hostname":"app.example.com","service":"http://localhost:9999"},{"service":"http_status:404"}]}`, false},
		{`{"ingress":[{"hostname":"app.example.com","service":"http://localhost:8080","originRequest":{"noTLSVerify":true}},{"service":"http_status:404"}]}`, false},
		{`{"ingress":[{"service":"http_status:404"},{"hostname":"app.example.com","service":"http://localhost:8080"}]}`, false},
		{`{"ingress":[{"service":"http_status:404"}]}`, false},
		{``, false},
		{`not json`, false},
	}
	for _, tc := range cases {
		if got := SameDocument(json.RawMessage(tc.remote), want); got != tc.same {
			t.Errorf("SameDocument(%s) = %v, want %v", tc.remote, got, tc.same)
		}
	}
}
