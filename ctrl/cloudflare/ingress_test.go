package cloudflare

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// TestBuildDocumentStreams: a hostname a TCPRoute or TLSRoute serves is a
// rule to the route's origin port on loopback with the route's scheme,
// and, behind Access, cloudflared's access check on that rule. The
// document is compared with testdata/streams.json (go test -update
// rewrites it).
func TestBuildDocumentStreams(t *testing.T) {
	doc, refused := buildDocument([]translate.Hostname{
		{Name: "app.example.com", HTTP: true},
		{Name: "db.example.com", Stream: &translate.StreamService{Route: "TCPRoute default/db", Port: 20000, Scheme: "tcp"}},
		{Name: "ssh.example.com", Stream: &translate.StreamService{Route: "TCPRoute ops/ssh", Port: 20001, Scheme: "ssh",
			Access: &translate.StreamAccess{TeamName: "acme", Audiences: []string{"aud-one", "aud-two"}}}},
		{Name: "desk.example.com", Stream: &translate.StreamService{Route: "TCPRoute ops/desk", Port: 20002, Scheme: "rdp",
			Access: &translate.StreamAccess{TeamName: "acme", Audiences: []string{"aud-desk"}}}},
		{Name: "tls.example.com", Stream: &translate.StreamService{Route: "TLSRoute default/tls", Port: 20003, Scheme: "tcp"}},
	}, &v1alpha1.OriginSettings{Socket: "/var/run/tunnelgate/origin.sock"})
	if len(refused) != 0 {
		t.Errorf("refused %q, want nothing refused", refused)
	}
	got, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "streams.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("document\n got %s\nwant %s", got, want)
	}
	if strings.Contains(string(got), "bastion") {
		t.Errorf("document names bastion: %s", got)
	}
}

// TestBuildDocumentRefusesStreams: a stream rule cloudflared would run
// wrongly is left out, so its hostname falls to the catch-all, and each
// is named with its route and why.
func TestBuildDocumentRefusesStreams(t *testing.T) {
	stream := func(name, scheme string, port int, a *translate.StreamAccess) translate.Hostname {
		return translate.Hostname{Name: name, Stream: &translate.StreamService{Route: "TCPRoute default/" + name, Port: port, Scheme: scheme, Access: a}}
	}
	doc, refused := buildDocument([]translate.Hostname{
		stream("noteam", "ssh", 20000, &translate.StreamAccess{Audiences: []string{"aud"}}),
		stream("noaud", "tcp", 20001, &translate.StreamAccess{TeamName: "acme"}),
		stream("bastion", "bastion", 20002, nil),
		stream("socks", "socks-proxy", 20003, nil),
		stream("port", "tcp", 70000, nil),
		stream("fine", "tcp", 20004, nil),
	}, nil)
	want := []string{
		`hostname bastion (TCPRoute default/bastion): stream scheme "bastion" is not one of tcp, ssh, rdp: not routed`,
		"hostname noaud (TCPRoute default/noaud): Access check without a team name or AUD tag (cloudflared would fail every stream): not routed",
		"hostname noteam (TCPRoute default/noteam): Access check without a team name or AUD tag (cloudflared would fail every stream): not routed",
		"hostname port (TCPRoute default/port): origin port 70000 is out of range: not routed",
		`hostname socks (TCPRoute default/socks): stream scheme "socks-proxy" is not one of tcp, ssh, rdp: not routed`,
	}
	if !slices.Equal(refused, want) {
		t.Errorf("refused\n got %q\nwant %q", refused, want)
	}
	if len(doc.Ingress) != 2 || doc.Ingress[0].Hostname != "fine" || doc.Ingress[1].Service != catchAll {
		t.Errorf("document %+v, want only fine and the catch-all", doc.Ingress)
	}
}
