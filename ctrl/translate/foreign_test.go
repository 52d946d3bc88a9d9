package translate_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// Conditions of types tunnelgate does not set, on a Gateway and on its
// listeners, are another's: they stay as they are. Its own types, and
// stale ones under tunnelgate.dev/, are its to replace or drop.
func TestForeignConditionsKept(t *testing.T) {
	in := loadGolden(t, "basic.yaml")
	gw := in.Gateways[0].DeepCopy()
	at := metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	foreign := metav1.Condition{Type: "example.com/Audited", Status: metav1.ConditionTrue, Reason: "Seeded", ObservedGeneration: 7, LastTransitionTime: at}
	gw.Status.Conditions = []metav1.Condition{
		{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "Old", LastTransitionTime: at},
		foreign,
		{Type: "tunnelgate.dev/Retired", Status: metav1.ConditionTrue, Reason: "Old", LastTransitionTime: at},
	}
	gw.Status.Listeners = []gwv1.ListenerStatus{{Name: gw.Spec.Listeners[0].Name, Conditions: []metav1.Condition{foreign}}}
	in.Gateways[0] = gw
	out := translate.Translate(in)
	st := out.Gateways[types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}]
	var kept *metav1.Condition
	for i, c := range st.Conditions {
		switch c.Type {
		case foreign.Type:
			kept = &st.Conditions[i]
		case "tunnelgate.dev/Retired":
			t.Error("a stale tunnelgate.dev/ condition was kept")
		case "Accepted":
			if c.Status != metav1.ConditionTrue {
				t.Errorf("Accepted %+v: the old one was kept", c)
			}
		}
	}
	if kept == nil || *kept != foreign {
		t.Errorf("the foreign Gateway condition is %+v, want %+v as it was", kept, foreign)
	}
	var onListener bool
	for _, c := range st.Listeners[0].Conditions {
		onListener = onListener || c == foreign
	}
	if !onListener {
		t.Errorf("the foreign listener condition is gone: %+v", st.Listeners[0].Conditions)
	}
}
