package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

func parent(controller, gw, reason string) gwv1.RouteParentStatus {
	return gwv1.RouteParentStatus{ParentRef: gwv1.ParentReference{Name: gwv1.ObjectName(gw)}, ControllerName: gwv1.GatewayController(controller),
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: reason}}}
}

// Our entries are replaced, everyone else's kept in place; nothing to do
// is reported as such, so a resync writes nothing.
func TestMergeParents(t *testing.T) {
	const us = "tunnelgate.dev/controller"
	other := parent("example.com/other", "gw-x", "Accepted")
	cases := []struct {
		name      string
		cur, ours []gwv1.RouteParentStatus
		want      []gwv1.RouteParentStatus
		differs   bool
	}{
		{"nothing either way", nil, nil, nil, false},
		{"first write", []gwv1.RouteParentStatus{other}, []gwv1.RouteParentStatus{parent(us, "gw", "Accepted")},
			[]gwv1.RouteParentStatus{other, parent(us, "gw", "Accepted")}, true},
		{"unchanged", []gwv1.RouteParentStatus{other, parent(us, "gw", "Accepted")}, []gwv1.RouteParentStatus{parent(us, "gw", "Accepted")}, nil, false},
		{"ours changes", []gwv1.RouteParentStatus{parent(us, "gw", "Accepted"), other}, []gwv1.RouteParentStatus{parent(us, "gw", "NotAllowedByListeners")},
			[]gwv1.RouteParentStatus{other, parent(us, "gw", "NotAllowedByListeners")}, true},
		{"no longer ours", []gwv1.RouteParentStatus{parent(us, "gw", "Accepted"), other}, nil, []gwv1.RouteParentStatus{other}, true},
	}
	for _, tc := range cases {
		got, differs := mergeParents(tc.cur, tc.ours, us)
		if differs != tc.differs {
			t.Errorf("%s: differs %v, want %v", tc.name, differs, tc.differs)
		}
		if differs && len(got) != len(tc.want) {
			t.Fatalf("%s: got %d entries, want %d", tc.name, len(got), len(tc.want))
		}
		for i := range tc.want {
			if differs && (got[i].ControllerName != tc.want[i].ControllerName || got[i].Conditions[0].Reason != tc.want[i].Conditions[0].Reason) {
				t.Errorf("%s: entry %d = %+v, want %+v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}

func TestSlimDropsWhatTranslateNeverReads(t *testing.T) {
	helm := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.x.v1",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "helm"}},
		Annotations:   map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "keep": "me"}},
		Type: "helm.sh/release.v1", Data: map[string][]byte{"release": make([]byte, 1<<20)}}
	tlsSecret := &corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("x")}}
	slim(helm)
	slim(tlsSecret)
	if helm.Data != nil || helm.ManagedFields != nil || helm.Annotations[corev1.LastAppliedConfigAnnotation] != "" || helm.Annotations["keep"] != "me" {
		t.Errorf("helm secret after slim: %+v", helm)
	}
	if tlsSecret.Data == nil {
		t.Error("a TLS secret lost its data")
	}
}

// Our CRDs arrive unstructured and are stored typed; one that does not
// convert keeps its identity with an empty spec rather than stopping the
// informer.
func TestTypedTransform(t *testing.T) {
	conv := typed(func() metav1.Object { return &v1alpha1.ExternalBackend{} })
	good := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tunnelgate.dev/v1alpha1", "kind": "ExternalBackend",
		"metadata": map[string]any{"namespace": "ns", "name": "api"},
		"spec":     map[string]any{"host": "api.example.com", "port": int64(443)},
	}}
	o, err := conv(good)
	if err != nil {
		t.Fatal(err)
	}
	eb, ok := o.(*v1alpha1.ExternalBackend)
	if !ok || eb.Spec.Host != "api.example.com" || eb.Name != "api" {
		t.Fatalf("converted to %#v", o)
	}
	bad := good.DeepCopy()
	bad.Object["spec"] = map[string]any{"port": "not a number"}
	o, err = conv(bad)
	if err != nil {
		t.Fatal(err)
	}
	if eb, ok := o.(*v1alpha1.ExternalBackend); !ok || eb.Name != "api" || eb.Namespace != "ns" || eb.Spec.Host != "" {
		t.Fatalf("a bad object converted to %#v", o)
	}
}

// mergeParents is mergeOurs for route parent statuses.
func mergeParents(cur, ours []gwv1.RouteParentStatus, controller string) ([]gwv1.RouteParentStatus, bool) {
	return mergeOurs(cur, ours, func(p gwv1.RouteParentStatus) bool { return string(p.ControllerName) == controller })
}
