// This file implements the tests of TCP listeners' public hostnames.

package translate_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/standalone"
	"github.com/tunnelgate/tunnelgate/test/fixture"
)

// A ListenerSet's annotation publishes its TCP entries, as a Gateway's
// publishes its own listeners: the TCPRoute on the entry is carried by
// the tunnel at that hostname, the ListenerSet says so, and an entry the
// annotation does not name is served in the cluster only.
func TestTCPHostnamesOfAListenerSet(t *testing.T) {
	doc := fixture.TunnelClassYAML("tunneled", translate.DefaultControllerName) + `---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: tunneled
  allowedListeners: {namespaces: {from: Same}}
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata:
  name: team
  annotations: {tunnelgate.dev/tcp-hostnames: "ssh=ssh.team.example.com"}
spec:
  parentRef: {name: gw}
  listeners:
  - {name: ssh, protocol: TCP, port: 2222}
  - {name: db, protocol: TCP, port: 5432}
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: ssh, creationTimestamp: "2025-01-01T00:00:00Z"}
spec:
  parentRefs: [{kind: ListenerSet, name: team, sectionName: ssh}]
  rules: [{backendRefs: [{name: sshd, port: 22}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: db, creationTimestamp: "2025-01-01T00:00:00Z"}
spec:
  parentRefs: [{kind: ListenerSet, name: team, sectionName: db}]
  rules: [{backendRefs: [{name: db, port: 5432}]}]
`
	snap, err := standalone.LoadBytes("tcp-hostnames.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	in := goldenInput(snap)
	in.Tunnels = map[string]*translate.TunnelState{"tunneled": {ID: "tunnel-id"}}
	out := translate.Translate(in)

	var streams []string
	for _, h := range out.Hostnames {
		if h.Stream != nil {
			streams = append(streams, h.Name+" "+h.Stream.Route)
		}
	}
	if want := []string{"ssh.team.example.com TCPRoute default/ssh"}; !slices.Equal(streams, want) {
		t.Errorf("stream hostnames %q, want %q", streams, want)
	}
	st := out.ListenerSets[nsName("default", "team")]
	if st == nil {
		t.Fatal("no status for ListenerSet team")
	}
	c := cond(st.Conditions, translate.ConditionTCPHostnames)
	if c == nil || c.Status != "True" || c.Message != "public hostnames, where a tunnel carries the listeners: ssh as ssh.team.example.com" {
		t.Errorf("ListenerSet team's %s: %+v", translate.ConditionTCPHostnames, c)
	}
	db := out.TCPRoutes[nsName("default", "db")]
	if len(db) != 1 || cond(db[0].Conditions, "Accepted") == nil || !strings.Contains(cond(db[0].Conditions, "Accepted").Message, "served in the cluster only") {
		t.Errorf("TCPRoute db on an entry without a public hostname: %+v, want Accepted saying it is served in the cluster only", db)
	}
	if gw := out.Gateways[nsName("default", "gw")]; cond(gw.Conditions, translate.ConditionTCPHostnames) != nil {
		t.Errorf("Gateway gw has no annotation, yet has the condition %s", translate.ConditionTCPHostnames)
	}
}
