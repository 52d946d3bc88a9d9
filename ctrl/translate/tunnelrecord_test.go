package translate_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// A Gateway with a tunnel of its own records on its status which tunnel
// that is and whether tunnelgate created it; the record reads back, and is
// kept while the tunnel's report does not name it yet (after a restart).
func TestTunnelRecord(t *testing.T) {
	gw := nsName("default", "team-a")
	key := translate.PlaneTunnelKey("tunnelgate", gw)
	const id = "6ff42ae2-765d-4adf-8112-31c55c1551ef"
	cases := []struct {
		name       string
		state      *translate.TunnelState
		deleteWith bool
		reason     string
		want       translate.TunnelRecord
	}{
		{"taken over", &translate.TunnelState{ID: id}, false, translate.TunnelReasonExisting, translate.TunnelRecord{ID: id}},
		{"created", &translate.TunnelState{ID: id, Created: true}, false, translate.TunnelReasonCreated,
			translate.TunnelRecord{ID: id, Created: true}},
		{"created, deleted with the Gateway", &translate.TunnelState{ID: id, Created: true}, true,
			translate.TunnelReasonCreatedDeleteWithGateway, translate.TunnelRecord{ID: id, Created: true, DeleteWithGateway: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := loadGolden(t, "planes.yaml")
			in.Provisioning = translate.ProvisionPlanes
			in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "class"}, key: tc.state}
			if tc.deleteWith {
				for i, c := range in.GatewayConfigs {
					if c.Name == "own-plane" {
						c = c.DeepCopy()
						c.Spec.Tunnel.DeleteWithGateway = true
						in.GatewayConfigs[i] = c
					}
				}
			}
			out := translate.Translate(in)
			c := cond(out.Gateways[gw].Conditions, translate.GatewayConditionTunnel)
			if c == nil || c.Status != metav1.ConditionTrue || c.Reason != tc.reason || !strings.HasPrefix(c.Message, "tunnel "+id+" ") {
				t.Fatalf("%s = %+v, want True %s naming the tunnel", translate.GatewayConditionTunnel, c, tc.reason)
			}
			written := writeBack(in, gw, out)
			if got, ok := translate.TunnelRecordOf(gatewayOf(written, gw)); !ok || got != tc.want {
				t.Errorf("record read back: %+v %v, want %+v", got, ok, tc.want)
			}

			// A restart: the tunnel's report names no tunnel yet.
			written.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "class"}, key: {Pending: "waiting for the first sync"}}
			again := translate.Translate(written)
			if k := cond(again.Gateways[gw].Conditions, translate.GatewayConditionTunnel); k == nil || *k != *c {
				t.Errorf("after a restart: %+v, want the record kept: %+v", k, c)
			}
		})
	}
}

// Before a tunnel to create by name exists, the Gateway's status says it
// is to be created (the intent, Unknown Creating), which reads back with
// the time it was first said; the time holds while the name does, and
// starts anew with another name. A record (True) is kept instead.
func TestTunnelIntent(t *testing.T) {
	gw := nsName("default", "team-a")
	key := translate.PlaneTunnelKey("tunnelgate", gw)
	in := loadGolden(t, "planes.yaml")
	in.Provisioning = translate.ProvisionPlanes
	in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "class"}, key: {Pending: "waiting for the intent", AwaitsIntent: true}}
	out := translate.Translate(in)
	c := cond(out.Gateways[gw].Conditions, translate.GatewayConditionTunnel)
	if c == nil || c.Status != metav1.ConditionUnknown || c.Reason != translate.TunnelReasonCreating {
		t.Fatalf("%s = %+v, want Unknown %s", translate.GatewayConditionTunnel, c, translate.TunnelReasonCreating)
	}
	written := writeBack(in, gw, out)
	intent, ok := translate.TunnelIntentOf(gatewayOf(written, gw))
	if !ok || intent.Name != "team-a" || !intent.Since.Equal(in.Now.Truncate(time.Second)) {
		t.Fatalf("intent read back: %+v %v, want team-a since %v", intent, ok, in.Now)
	}
	if _, ok := translate.TunnelRecordOf(gatewayOf(written, gw)); ok {
		t.Error("the intent reads as a record")
	}

	// Only the controller's own quoting of the name is read back: the
	// same status hand-written with another quoting is no intent.
	prefix, rest, _ := strings.Cut(c.Message, strconv.Quote("team-a"))
	for _, quoted := range []string{"`team-a`", `"\x74eam-a"`, `"\u0074eam-a"`, `"\377"`, "\"a\x00b\"", "'a'"} {
		hand := *c
		hand.Message = prefix + quoted + rest
		if got, ok := translate.TunnelIntentOf(&gwv1.Gateway{Status: gwv1.GatewayStatus{Conditions: []metav1.Condition{hand}}}); ok {
			t.Errorf("%q read as an intent for %q", hand.Message, got.Name)
		}
	}

	// Later, the same name: the same time. Another name: a new time.
	later := *written
	later.Now = in.Now.Add(time.Hour)
	if got, _ := translate.TunnelIntentOf(gatewayOf(writeBack(&later, gw, translate.Translate(&later)), gw)); !got.Since.Equal(intent.Since) {
		t.Errorf("the same intent later: since %v, want %v", got.Since, intent.Since)
	}
	for i, c := range later.GatewayConfigs {
		if c.Name == "own-plane" {
			c = c.DeepCopy()
			c.Spec.Tunnel.Name = "team-a-renamed"
			later.GatewayConfigs = slices.Clone(later.GatewayConfigs)
			later.GatewayConfigs[i] = c
		}
	}
	got, ok := translate.TunnelIntentOf(gatewayOf(writeBack(&later, gw, translate.Translate(&later)), gw))
	if !ok || got.Name != "team-a-renamed" || !got.Since.Equal(later.Now.Truncate(time.Second)) {
		t.Errorf("a renamed tunnel's intent: %+v %v, want team-a-renamed since %v", got, ok, later.Now)
	}
}

// Records written by hand, or by something else, are not read.
func TestTunnelRecordRefusesOthers(t *testing.T) {
	good := metav1.Condition{Type: translate.GatewayConditionTunnel, Status: metav1.ConditionTrue,
		Reason: translate.TunnelReasonCreated, Message: "tunnel 6ff42ae2-765d-4adf-8112-31c55c1551ef was created"}
	for name, mutate := range map[string]func(c *metav1.Condition){
		"false":          func(c *metav1.Condition) { c.Status = metav1.ConditionFalse },
		"other reason":   func(c *metav1.Condition) { c.Reason = "Adopted" },
		"no tunnel word": func(c *metav1.Condition) { c.Message = "6ff42ae2-765d-4adf-8112-31c55c1551ef was created" },
		"a path":         func(c *metav1.Condition) { c.Message = "tunnel ../../zones/x was created" },
		"a query":        func(c *metav1.Condition) { c.Message = "tunnel abc?client_id=1 was created" },
		"empty id":       func(c *metav1.Condition) { c.Message = "tunnel  was created" },
	} {
		c := good
		mutate(&c)
		g := gatewayWith(c)
		if rec, ok := translate.TunnelRecordOf(g); ok {
			t.Errorf("%s: read %+v", name, rec)
		}
	}
	if _, ok := translate.TunnelRecordOf(gatewayWith(good)); !ok {
		t.Error("the good record is not read")
	}
}

// A Gateway being deleted is served no more, but still holds its class.
func TestDeletingGatewayNotServed(t *testing.T) {
	in := loadGolden(t, "basic.yaml")
	out := translate.Translate(in)
	var gw types.NamespacedName
	for k := range out.Gateways {
		gw = k
		break
	}
	class := string(gatewayOf(in, gw).Spec.GatewayClassName)
	for i, g := range in.Gateways {
		if g.Namespace == gw.Namespace && g.Name == gw.Name {
			g = g.DeepCopy()
			g.DeletionTimestamp = &metav1.Time{Time: goldenNow}
			g.Finalizers = []string{"example.com/wait"}
			in.Gateways[i] = g
		}
	}
	gone := translate.Translate(in)
	if _, ok := gone.Gateways[gw]; ok {
		t.Errorf("Gateway %s being deleted still has a status to write", gw)
	}
	for _, l := range gone.Config.Listeners {
		if strings.HasPrefix(l.Name, gw.Namespace+"/"+gw.Name+"/") {
			t.Errorf("listener %s of a Gateway being deleted still served", l.Name)
		}
	}
	if !gone.GatewayClasses[class].Finalizer {
		t.Errorf("class %s lost its finalizer while its Gateway is being deleted", class)
	}
}

// writeBack is in with out's statuses written onto copies of its objects,
// as they come back from the controller's writes.
func writeBack(in *translate.Input, gw types.NamespacedName, out *translate.Output) *translate.Input {
	next := *in
	next.Snapshot.Gateways = slices.Clone(in.Gateways)
	next.Snapshot.GatewayClasses = slices.Clone(in.GatewayClasses)
	next.Snapshot.ListenerSets = slices.Clone(in.ListenerSets)
	next.Snapshot.HTTPRoutes = slices.Clone(in.HTTPRoutes)
	next.Snapshot.GRPCRoutes = slices.Clone(in.GRPCRoutes)
	next.Snapshot.BackendTLSPolicies = slices.Clone(in.BackendTLSPolicies)
	writeBackAll(&next.Snapshot, out)
	return &next
}

func gatewayOf(in *translate.Input, key types.NamespacedName) *gwv1.Gateway {
	for _, g := range in.Gateways {
		if g.Namespace == key.Namespace && g.Name == key.Name {
			return g
		}
	}
	return nil
}

func gatewayWith(c metav1.Condition) *gwv1.Gateway {
	return &gwv1.Gateway{Status: gwv1.GatewayStatus{Conditions: []metav1.Condition{c}}}
}

// A Gateway gone off its own tunnel keeps its record while the
// controller's finalizer holds it (the cleanup reads it), and drops it
// after.
func TestTunnelRecordKeptForTheCleanup(t *testing.T) {
	gw := nsName("default", "team-a")
	const id = "6ff42ae2-765d-4adf-8112-31c55c1551ef"
	in := loadGolden(t, "planes.yaml")
	in.Provisioning = translate.ProvisionPlanes
	in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "class"},
		translate.PlaneTunnelKey("tunnelgate", gw): {ID: id, Created: true}}
	in = writeBack(in, gw, translate.Translate(in))
	for _, held := range []bool{true, false} {
		next := *in
		next.Gateways = slices.Clone(in.Gateways)
		for i, g := range next.Gateways {
			if g.Namespace == gw.Namespace && g.Name == gw.Name {
				g = g.DeepCopy()
				g.Spec.Infrastructure = nil // back to the shared proxies
				if held {
					g.Finalizers = []string{translate.TunnelFinalizer}
				}
				next.Gateways[i] = g
			}
		}
		c := cond(translate.Translate(&next).Gateways[gw].Conditions, translate.GatewayConditionTunnel)
		if held && (c == nil || c.Reason != translate.TunnelReasonCreated) {
			t.Errorf("held by the finalizer: record %+v, want it kept", c)
		}
		if !held && c != nil {
			t.Errorf("no finalizer: record %+v, want it dropped", c)
		}
	}
}
