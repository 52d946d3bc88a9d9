// This file tests that standalone mode reads DNSPolicies: the CRD's
// default, and their statuses described.

package standalone

import (
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

func TestLoadDNSPolicy(t *testing.T) {
	const doc = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: tunnelgate}
spec: {controllerName: tunnelgate.dev/controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: tunnelgate
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: tunnelgate.dev/v1alpha1
kind: DNSPolicy
metadata: {name: edge}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw}]
status:
  ancestors: [{ancestorRef: {name: stale}, controllerName: tunnelgate.dev/controller, conditions: []}]
`
	snap, err := LoadBytes("dnspolicy.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.DNSPolicies) != 1 {
		t.Fatalf("DNSPolicies %+v", snap.DNSPolicies)
	}
	p := snap.DNSPolicies[0]
	if p.Spec.Records != v1alpha1.DNSRecordsManaged || len(p.Status.Ancestors) != 0 || p.Namespace != "default" {
		t.Errorf("loaded %+v", p)
	}
	out := translate.Translate(&translate.Input{Snapshot: *snap, ControllerName: translate.DefaultControllerName, Now: time.Unix(0, 0)})
	var b strings.Builder
	Describe(&b, snap, out)
	if !strings.Contains(b.String(), "DNSPolicy default/edge") || !strings.Contains(b.String(), "no public hostname is published through Gateway gw yet") {
		t.Errorf("described:\n%s", b.String())
	}
}
