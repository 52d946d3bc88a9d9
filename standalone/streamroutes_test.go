package standalone

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

const streamRoutesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: db}
spec:
  parentRefs: [{name: gw, sectionName: pg}]
  rules: [{backendRefs: [{name: pg, port: 5432}]}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TCPRoute
metadata: {name: old, namespace: ops}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: ssh, port: 22}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: tls}
spec:
  parentRefs: [{name: gw}]
  hostnames: [tls.example.com]
  rules: [{backendRefs: [{name: tls, port: 8443, weight: 3}]}]
status:
  parents: [{parentRef: {name: gw}, controllerName: example.com/x, conditions: []}]
---
apiVersion: gateway.networking.k8s.io/v1alpha3
kind: TLSRoute
metadata: {name: v3}
spec:
  hostnames: [v3.example.com]
  rules: [{backendRefs: [{name: tls, port: 8443}]}]
`

// TCPRoutes and TLSRoutes are read in the versions the CRDs serve, with
// the defaults the API server sets (parentRef group and kind, backendRef
// group, kind and weight), and without the status a create drops.
func TestLoadStreamRoutes(t *testing.T) {
	snap, err := LoadBytes("streams.yaml", []byte(streamRoutesYAML))
	if err != nil {
		t.Fatal(err)
	}
	eqNames(t, "TCPRoutes", names(snap.TCPRoutes), []string{"default/db", "ops/old"})
	eqNames(t, "TLSRoutes", names(snap.TLSRoutes), []string{"default/tls", "default/v3"})
	db := snap.TCPRoutes[0]
	p, b := db.Spec.ParentRefs[0], db.Spec.Rules[0].BackendRefs[0]
	eq(t, "parentRef group", *p.Group, gwv1.GroupName)
	eq(t, "parentRef kind", *p.Kind, "Gateway")
	eq(t, "backendRef group", *b.Group, "")
	eq(t, "backendRef kind", *b.Kind, "Service")
	eq(t, "backendRef weight", *b.Weight, 1)
	eq(t, "apiVersion", db.APIVersion, "gateway.networking.k8s.io/v1")
	eq(t, "old apiVersion", snap.TCPRoutes[1].APIVersion, "gateway.networking.k8s.io/v1")
	tls := snap.TLSRoutes[0]
	eq(t, "TLSRoute weight", *tls.Spec.Rules[0].BackendRefs[0].Weight, 3)
	eq(t, "TLSRoute kind", *tls.Spec.Rules[0].BackendRefs[0].Kind, "Service")
	eq(t, "TLSRoute hostname", string(tls.Spec.Hostnames[0]), "tls.example.com")
	eq(t, "TLSRoute status parents", len(tls.Status.Parents), 0)
}

// Their statuses appear in Describe and, when not ready, in NotReady (the
// -check output), after GRPCRoutes and before policies.
func TestDescribeStreamRoutes(t *testing.T) {
	parents := func(c metav1.Condition) []gwv1.RouteParentStatus {
		return []gwv1.RouteParentStatus{{ParentRef: parentRef("", "gw", ""), ControllerName: "tunnelgate.dev/gateway-controller",
			Conditions: []metav1.Condition{c}}}
	}
	out := &translate.Output{
		TCPRoutes: map[types.NamespacedName][]gwv1.RouteParentStatus{nn("default", "db"): parents(cond("Accepted", metav1.ConditionTrue, "Accepted", ""))},
		TLSRoutes: map[types.NamespacedName][]gwv1.RouteParentStatus{nn("default", "tls"): parents(cond("Accepted", metav1.ConditionFalse, "NotAllowedByListeners", "no TLS listener"))},
	}
	var b strings.Builder
	Describe(&b, nil, out)
	got := b.String()
	i, j := strings.Index(got, "TCPRoute default/db"), strings.Index(got, "TLSRoute default/tls")
	if i < 0 || j < i {
		t.Errorf("Describe printed:\n%s\nwant TCPRoute default/db, then TLSRoute default/tls", got)
	}
	want := []string{
		"TCPRoute default/db (parent gateway default/gw): ResolvedRefs missing",
		"TLSRoute default/tls (parent gateway default/gw): Accepted=False NotAllowedByListeners: no TLS listener; ResolvedRefs missing",
	}
	if got := NotReady(out); !slices.Equal(got, want) {
		t.Errorf("NotReady =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
