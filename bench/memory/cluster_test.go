package memory

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Cluster is a cluster of routes HTTPRoutes over routes/10 hostnames,
// attached to one Gateway listener: each route one rule with two matches
// (a path with a header, the same path alone), a request header filter,
// and two backends weighted 90/10, each a Service with a two-endpoint
// EndpointSlice.
func Cluster(routes int) *translate.Snapshot {
	s := &translate.Snapshot{}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	meta := func(ns, name string, i int) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, UID: types.UID("uid-" + ns + "-" + name),
			CreationTimestamp: metav1.NewTime(base.Add(time.Duration(i) * time.Second))}
	}
	s.GatewayClasses = append(s.GatewayClasses, &gwv1.GatewayClass{ObjectMeta: meta("", "tunnelgate", 0),
		Spec: gwv1.GatewayClassSpec{ControllerName: translate.DefaultControllerName}})
	from := gwv1.NamespacesFromAll
	s.Gateways = append(s.Gateways, &gwv1.Gateway{ObjectMeta: meta("infra", "gw", 0),
		Spec: gwv1.GatewaySpec{GatewayClassName: "tunnelgate", Listeners: []gwv1.Listener{{
			Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80,
			AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &from}},
		}}}})
	prefix, exact := gwv1.PathMatchPathPrefix, gwv1.HeaderMatchExact
	gwNS := gwv1.Namespace("infra")
	hosts := max(routes/10, 1)
	for r := range routes {
		ns := fmt.Sprintf("team-%d", r%50)
		name := fmt.Sprintf("app-%d", r)
		path := fmt.Sprintf("/svc-%d", r/hosts)
		port := gwv1.PortNumber(80)
		weights := [2]int32{90, 10}
		var backends []gwv1.HTTPBackendRef
		for i, svc := range []string{name + "-stable", name + "-canary"} {
			backends = append(backends, gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{Weight: &weights[i],
				BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(svc), Port: &port}}})
			s.Services = append(s.Services, &corev1.Service{ObjectMeta: meta(ns, svc, r),
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}})
			pname, pnum := "http", int32(8080)
			sl := &discoveryv1.EndpointSlice{ObjectMeta: meta(ns, svc+"-abcde", r), AddressType: discoveryv1.AddressTypeIPv4,
				Ports: []discoveryv1.EndpointPort{{Name: &pname, Port: &pnum}}}
			sl.Labels = map[string]string{discoveryv1.LabelServiceName: svc}
			for e := range 2 {
				n := 2*(2*r+i) + e
				sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 1+n/65536, (n/256)%256, n%256)}})
			}
			s.EndpointSlices = append(s.EndpointSlices, sl)
		}
		s.HTTPRoutes = append(s.HTTPRoutes, &gwv1.HTTPRoute{ObjectMeta: meta(ns, name, r),
			Spec: gwv1.HTTPRouteSpec{
				CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Namespace: &gwNS, Name: "gw"}}},
				Hostnames:       []gwv1.Hostname{gwv1.Hostname(fmt.Sprintf("host-%d.example.com", r%hosts))},
				Rules: []gwv1.HTTPRouteRule{{
					Matches: []gwv1.HTTPRouteMatch{
						{Path: &gwv1.HTTPPathMatch{Type: &prefix, Value: &path}, Headers: []gwv1.HTTPHeaderMatch{{Type: &exact, Name: "x-canary", Value: "1"}}},
						{Path: &gwv1.HTTPPathMatch{Type: &prefix, Value: &path}},
					},
					Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestHeaderModifier,
						RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "X-Team", Value: ns}}}}},
					BackendRefs: backends,
				}},
			}})
	}
	return s
}

// clusterConfig is the proxy config translate makes of Cluster(routes),
// with its version.
func clusterConfig(routes int) (*proxycfg.Config, error) {
	out := translate.Translate(&translate.Input{Snapshot: *Cluster(routes), ControllerName: translate.DefaultControllerName,
		Now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)})
	cfg := out.Config
	if len(cfg.Routes) != routes {
		return nil, fmt.Errorf("translate made %d routes of %d", len(cfg.Routes), routes)
	}
	v, err := proxycfg.ContentVersion(&cfg)
	if err != nil {
		return nil, err
	}
	cfg.Version = v
	return &cfg, nil
}
