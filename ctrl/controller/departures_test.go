package controller

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// Which Gateways holding the finalizer depart, and what their cleanup
// asks: the tunnel from the GatewayConfig, or from the status record
// when the GatewayConfig is gone; deleted only for a Gateway being
// deleted that asks and records creating it.
func TestDepartures(t *testing.T) {
	const controllerName = "tunnelgate.dev/controller"
	const recorded = "6ff42ae2-765d-4adf-8112-31c55c1551ef"
	ref := func(name string) *gwv1.GatewayInfrastructure {
		return &gwv1.GatewayInfrastructure{ParametersRef: &gwv1.LocalParametersReference{Group: v1alpha1.Group, Kind: v1alpha1.KindGatewayConfig, Name: name}}
	}
	gateway := func(name, class string, inf *gwv1.GatewayInfrastructure, record string) *gwv1.Gateway {
		g := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Finalizers: []string{"other", translate.TunnelFinalizer}},
			Spec: gwv1.GatewaySpec{GatewayClassName: gwv1.ObjectName(class), Infrastructure: inf}}
		if record != "" {
			g.Status.Conditions = []metav1.Condition{{Type: translate.GatewayConditionTunnel, Status: metav1.ConditionTrue,
				Reason: record, Message: "tunnel " + recorded + " was created"}}
		}
		return g
	}
	config := func(name, dataPlane string, tun *v1alpha1.GatewayTunnel) *v1alpha1.GatewayConfig {
		return &v1alpha1.GatewayConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
			Spec: v1alpha1.GatewayConfigSpec{DataPlane: dataPlane, Tunnel: tun}}
	}
	classes := []*gwv1.GatewayClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "ours"}, Spec: gwv1.GatewayClassSpec{ControllerName: controllerName,
			ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: v1alpha1.KindGatewayClassConfig, Name: "cfg"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "bare"}, Spec: gwv1.GatewayClassSpec{ControllerName: controllerName}},
	}
	still := gateway("still-own", "ours", ref("named"), "")
	snap := &translate.Snapshot{
		GatewayClasses: classes,
		GatewayClassConfigs: []*v1alpha1.GatewayClassConfig{{ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
			Spec: v1alpha1.GatewayClassConfigSpec{CredentialsRef: &v1alpha1.SecretKeyRef{Namespace: "tg", Name: "cf"},
				DNS: &v1alpha1.DNSSettings{Enabled: true}}}},
		Secrets: []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "tg", Name: "cf"}, Data: map[string][]byte{"token": []byte("t")}}},
		GatewayConfigs: []*v1alpha1.GatewayConfig{
			config("named", v1alpha1.DataPlaneDedicated, &v1alpha1.GatewayTunnel{Name: "team-tunnel", DeleteWithGateway: true}),
			config("kept", v1alpha1.DataPlaneDedicated, &v1alpha1.GatewayTunnel{Name: "team-kept"}),
			config("in-cluster", v1alpha1.DataPlaneDedicated, nil),
			config("shared", v1alpha1.DataPlaneShared, nil),
		},
		Gateways: []*gwv1.Gateway{
			still,
			gateway("typo", "ours", ref("not-there"), translate.TunnelReasonCreated),
			deleting(gateway("deleted", "ours", ref("named"), translate.TunnelReasonCreatedDeleteWithGateway)),
			deleting(gateway("deleted-kept", "ours", ref("kept"), translate.TunnelReasonCreated)),
			deleting(gateway("config-gone", "ours", ref("gone"), translate.TunnelReasonCreatedDeleteWithGateway)),
			deleting(gateway("config-gone-kept", "ours", ref("gone"), translate.TunnelReasonCreated)),
			gateway("now-in-cluster", "ours", ref("in-cluster"), translate.TunnelReasonCreatedDeleteWithGateway),
			gateway("now-shared", "ours", ref("shared"), translate.TunnelReasonExisting),
			deleting(gateway("class-gone", "bare", ref("named"), "")),
		},
	}
	out := &translate.Output{Planes: map[types.NamespacedName]*translate.Plane{
		{Namespace: "team", Name: "still-own"}: {Gateway: still, Params: snap.GatewayConfigs[0]},
	}}
	type want struct {
		tunnelName, tunnelID string
		deleteTunnel         bool
		created              string
		why                  bool
	}
	wants := map[string]want{
		"deleted":          {tunnelName: "team-tunnel", deleteTunnel: true, created: recorded},
		"deleted-kept":     {tunnelName: "team-kept", created: recorded},
		"config-gone":      {tunnelID: recorded, deleteTunnel: true, created: recorded},
		"config-gone-kept": {tunnelID: recorded, created: recorded},
		"now-in-cluster":   {tunnelID: recorded, created: recorded},
		"now-shared":       {tunnelID: recorded},
		"class-gone":       {why: true},
	}
	deps := departures(snap, out, classConfigs(snap, controllerName))
	var names []string
	for _, d := range deps {
		name := d.gateway.Name
		names = append(names, name)
		w, ok := wants[name]
		if !ok {
			t.Errorf("%s departs", name)
			continue
		}
		if w.why {
			if d.desired != nil || d.why == "" {
				t.Errorf("%s: %+v, want no cleanup and a reason", name, d)
			}
			continue
		}
		got := d.desired
		if got == nil || !got.Departing || got.Problem != "" || got.Token != "t" || got.Hostnames != nil {
			t.Fatalf("%s: %+v", name, got)
		}
		if tun := got.Spec.Tunnel; tun == nil || tun.Name != w.tunnelName || tun.ID != w.tunnelID || tun.TokenSecretRef != nil {
			t.Errorf("%s: tunnel %+v, want name %q id %q", name, tun, w.tunnelName, w.tunnelID)
		}
		if got.DeleteTunnel != w.deleteTunnel || got.CreatedTunnel != w.created {
			t.Errorf("%s: delete %v created %q, want %v %q", name, got.DeleteTunnel, got.CreatedTunnel, w.deleteTunnel, w.created)
		}
		if got.Spec.DNS == nil || got.Spec.DNS.OwnerID != "ours/team/"+name {
			t.Errorf("%s: DNS %+v, want the Gateway's own owner", name, got.Spec.DNS)
		}
	}
	slices.Sort(names)
	if len(names) != len(wants) {
		t.Errorf("departing: %v, want %d of them", names, len(wants))
	}
}

// A GatewayConfig edited, while its Gateway is deleted, to name a tunnel
// the class's policy refuses is not followed: only the record counts.
func TestDepartureKeepsToThePolicy(t *testing.T) {
	const recorded = "6ff42ae2-765d-4adf-8112-31c55c1551ef"
	g := deleting(&gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "gw", Finalizers: []string{translate.TunnelFinalizer}},
		Spec: gwv1.GatewaySpec{GatewayClassName: "ours", Infrastructure: &gwv1.GatewayInfrastructure{
			ParametersRef: &gwv1.LocalParametersReference{Group: v1alpha1.Group, Kind: v1alpha1.KindGatewayConfig, Name: "own"}}},
		Status: gwv1.GatewayStatus{Conditions: []metav1.Condition{{Type: translate.GatewayConditionTunnel, Status: metav1.ConditionTrue,
			Reason: translate.TunnelReasonCreated, Message: "tunnel " + recorded + " was created"}}}})
	cc := &v1alpha1.GatewayClassConfig{Spec: v1alpha1.GatewayClassConfigSpec{GatewayTunnels: &v1alpha1.GatewayTunnelPolicy{NamePrefix: "{namespace}-"}}}
	for name, tun := range map[string]v1alpha1.GatewayTunnel{
		"outside the prefix": {Name: "other-cluster", DeleteWithGateway: true},
		"an ID":              {ID: "11111111-2222-4333-8444-555555555555", DeleteWithGateway: true},
	} {
		cfg := &v1alpha1.GatewayConfig{Spec: v1alpha1.GatewayConfigSpec{DataPlane: v1alpha1.DataPlaneDedicated, Tunnel: &tun}}
		d := departureOf(&translate.Snapshot{}, g, "ours", cc, cfg)
		if d.Spec.Tunnel == nil || d.Spec.Tunnel.ID != recorded || d.Spec.Tunnel.Name != "" || d.DeleteTunnel {
			t.Errorf("%s: tunnel %+v delete %v; want the recorded one, kept", name, d.Spec.Tunnel, d.DeleteTunnel)
		}
	}
}
