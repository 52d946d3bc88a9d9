package fuzz

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/standalone"
)

// FuzzTunnelToken feeds TunnelIDOfToken whatever a user may put in a
// tunnel token Secret. It gives a tunnel ID or an error, never both,
// never a panic; and the ID it reads is the one a token made of it holds.
//
// Seeds (also in testdata/fuzz/FuzzTunnelToken): a token as Cloudflare
// hands it out, one with a trailing newline, one without a tunnel, JSON
// that is not an object, text that is not base64, nothing.
func FuzzTunnelToken(f *testing.F) {
	f.Add(base64.StdEncoding.EncodeToString([]byte(`{"a":"acc","t":"6ff42ae2-765d-4adf-8112-31c55c1551ef","s":"c2VjcmV0"}`)))
	f.Add(base64.StdEncoding.EncodeToString([]byte(`{"a":"acc","t":"tid","s":"c2VjcmV0"}`)) + "\n")
	f.Add(base64.StdEncoding.EncodeToString([]byte(`{"a":"acc"}`)))
	f.Add(base64.StdEncoding.EncodeToString([]byte(`["t"]`)))
	f.Add("not base64!")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		id, err := cloudflare.TunnelIDOfToken(token)
		if (id == "") == (err == nil) {
			t.Fatalf("id %q and error %v: want exactly one", id, err)
		}
		if err != nil {
			return
		}
		b, _ := json.Marshal(map[string]string{"t": id})
		if again, err := cloudflare.TunnelIDOfToken(base64.StdEncoding.EncodeToString(b)); err != nil || again != id {
			t.Fatalf("a token holding %q reads as %q, %v", id, again, err)
		}
	})
}

// FuzzTunnelRecord feeds TunnelRecordOf whatever a Gateway's status may
// hold, since anyone with gateways/status can write it. A record read
// names a tunnel ID made of a UUID's characters only (it goes into API
// paths), the one its message starts with, and never asks to delete a
// tunnel tunnelgate did not create.
//
// Seeds (also in testdata/fuzz/FuzzTunnelRecord): the three reasons
// tunnelgate writes, an upper-case ID, a path, a query, an empty ID.
func FuzzTunnelRecord(f *testing.F) {
	f.Add("Created", "tunnel 6ff42ae2-765d-4adf-8112-31c55c1551ef was created by tunnelgate")
	f.Add("CreatedDeleteWithGateway", "tunnel 6FF42AE2 x")
	f.Add("Existing", "tunnel ../x y")
	f.Add("Existing", "tunnel ")
	f.Add("Created", "tunnel a/b?c=d#e")
	f.Fuzz(func(t *testing.T, reason, msg string) {
		g := &gwv1.Gateway{Status: gwv1.GatewayStatus{Conditions: []metav1.Condition{{
			Type: translate.GatewayConditionTunnel, Status: metav1.ConditionTrue, Reason: reason, Message: msg}}}}
		rec, ok := translate.TunnelRecordOf(g)
		if !ok {
			return
		}
		if rec.ID == "" || len(rec.ID) > 64 || strings.Trim(rec.ID, "0123456789abcdefABCDEF-") != "" {
			t.Fatalf("record %+v read from %q", rec, msg)
		}
		if !strings.HasPrefix(msg, "tunnel "+rec.ID) {
			t.Fatalf("ID %q is not the one %q names", rec.ID, msg)
		}
		if rec.DeleteWithGateway && !rec.Created {
			t.Fatalf("a tunnel not created by tunnelgate to be deleted: %+v", rec)
		}
	})
}

// FuzzTunnelIntent feeds TunnelIntentOf whatever a Gateway's status may
// hold in the tunnel condition (status, reason, message and time), since
// anyone with gateways/status can write it, and the Cloudflare sync
// takes a tunnel of the name it reads, made after its time, as
// tunnelgate's. An intent read names a tunnel, is written as the
// controller writes one (the intent's status and reason, the message
// starting with its prefix and the name as strconv.Quote writes it) and
// carries the condition's time. An intent the controller records for
// that name (translate.Translate, the Gateway's GatewayConfig naming the
// tunnel) reads back as the name.
//
// Seeds: the intent the controller records, it with another reason,
// with another status, with the name's quote not closed, with an empty
// name, with a name of a byte that is not UTF-8 (read as U+FFFD), and
// quoted otherwise than strconv.Quote does (a raw control byte,
// backquotes), which the fuzzer found read once.
func FuzzTunnelIntent(f *testing.F) {
	recorded := recordIntent(f, "team-a")
	if recorded == nil {
		f.Fatal("no intent recorded for tunnel team-a")
	}
	// The prefix is the controller's own: what its message holds before
	// the name.
	prefix, _, ok := strings.Cut(recorded.Message, strconv.Quote("team-a"))
	if !ok || prefix == "" {
		f.Fatalf("the recorded intent %q does not hold the name quoted", recorded.Message)
	}
	add := func(status metav1.ConditionStatus, reason, msg string) {
		f.Add(string(status), reason, msg, recorded.LastTransitionTime.Unix())
	}
	add(recorded.Status, recorded.Reason, recorded.Message)
	add(recorded.Status, translate.TunnelReasonCreated, recorded.Message)
	add(metav1.ConditionTrue, recorded.Reason, recorded.Message)
	add(recorded.Status, recorded.Reason, prefix+`"team-a for this Gateway`)
	add(recorded.Status, recorded.Reason, prefix+`"" for this Gateway`)
	add(recorded.Status, recorded.Reason, prefix+"\"\xff\"")
	add(recorded.Status, recorded.Reason, prefix+"\"a\x00b\"")
	add(recorded.Status, recorded.Reason, prefix+"`team-a`")
	f.Fuzz(func(t *testing.T, status, reason, msg string, since int64) {
		at := metav1.NewTime(time.Unix(since, 0))
		g := &gwv1.Gateway{Status: gwv1.GatewayStatus{Conditions: []metav1.Condition{{
			Type: translate.GatewayConditionTunnel, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg,
			LastTransitionTime: at}}}}
		intent, ok := translate.TunnelIntentOf(g)
		if !ok {
			if intent != (translate.TunnelIntent{}) {
				t.Fatalf("no intent, but %+v", intent)
			}
			return
		}
		if intent.Name == "" {
			t.Fatalf("an intent without a name read from %q", msg)
		}
		if metav1.ConditionStatus(status) != recorded.Status || reason != recorded.Reason {
			t.Fatalf("an intent read from status %q reason %q", status, reason)
		}
		// A status reaches the controller as JSON, whose strings are
		// valid UTF-8 (a decoder makes each invalid byte U+FFFD): the
		// message of an invalid one is not held to the controller's
		// writing.
		if utf8.ValidString(msg) && !strings.HasPrefix(msg, prefix+strconv.Quote(intent.Name)) {
			t.Fatalf("name %q read from %q, which the controller writes %q", intent.Name, msg, prefix+strconv.Quote(intent.Name))
		}
		if !intent.Since.Equal(at.Time) {
			t.Fatalf("since %v, the condition's time being %v", intent.Since, at.Time)
		}
		c := recordIntent(t, intent.Name)
		if c == nil {
			t.Fatalf("no intent recorded for tunnel %q", intent.Name)
		}
		again, ok := translate.TunnelIntentOf(&gwv1.Gateway{Status: gwv1.GatewayStatus{Conditions: []metav1.Condition{*c}}})
		if !ok || again.Name != intent.Name {
			t.Fatalf("the intent recorded for %q (%q) reads back as %q, %v", intent.Name, c.Message, again.Name, ok)
		}
	})
}

// intentObjects are a Gateway with a tunnel of its own to create
// (GatewayConfig own-plane names it), in a class with a Cloudflare
// account.
const intentObjects = `
apiVersion: v1
kind: Secret
metadata: {name: cloudflare}
data: {token: dG9rZW4=}
---
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayClassConfig
metadata: {name: with-account}
spec:
  credentialsRef: {namespace: default, name: cloudflare}
  tunnel: {name: class-tunnel}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: tunnelgate}
spec:
  controllerName: tunnelgate.dev/controller
  parametersRef: {group: tunnelgate.dev, kind: GatewayClassConfig, name: with-account}
---
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: own-plane}
spec:
  dataPlane: Dedicated
  tunnel: {name: placeholder}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: team-a}
spec:
  gatewayClassName: tunnelgate
  infrastructure:
    parametersRef: {group: tunnelgate.dev, kind: GatewayConfig, name: own-plane}
  listeners:
  - {name: http, protocol: HTTP, port: 80, hostname: "*.a.example.com"}
`

var intentSnapshot = sync.OnceValues(func() (*translate.Snapshot, error) {
	return standalone.LoadBytes("intent.yaml", []byte(intentObjects))
})

// recordIntent is the tunnel condition the controller sets on a Gateway
// whose own tunnel, name, awaits the intent: the intent, as written; nil
// when it sets none.
func recordIntent(tb testing.TB, name string) *metav1.Condition {
	tb.Helper()
	snap, err := intentSnapshot()
	if err != nil {
		tb.Fatal(err)
	}
	in := &translate.Input{Snapshot: *snap, ControllerName: translate.DefaultControllerName,
		Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Provisioning: translate.ProvisionPlanes, AnyEndpointAddress: true}
	in.GatewayConfigs = slices.Clone(snap.GatewayConfigs)
	for i, c := range in.GatewayConfigs {
		c = c.DeepCopy()
		c.Spec.Tunnel.Name = name
		in.GatewayConfigs[i] = c
	}
	gw := types.NamespacedName{Namespace: "default", Name: "team-a"}
	in.Tunnels = map[string]*translate.TunnelState{"tunnelgate": {ID: "class"},
		translate.PlaneTunnelKey("tunnelgate", gw): {Pending: "waiting for the intent", AwaitsIntent: true}}
	st := translate.Translate(in).Gateways[gw]
	if st == nil {
		tb.Fatalf("no status for Gateway %s", gw)
	}
	for i := range st.Conditions {
		if c := &st.Conditions[i]; c.Type == translate.GatewayConditionTunnel {
			if c.Status != metav1.ConditionUnknown || c.Reason != translate.TunnelReasonCreating {
				tb.Fatalf("tunnel %q: %+v, want an intent", name, c)
			}
			return c
		}
	}
	return nil
}
