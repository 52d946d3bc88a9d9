package translate_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// scaleSnapshot builds a cluster of the benchmark's shape: gateways
// Gateways with one wildcard HTTP listener each, routes HTTPRoutes spread
// over them (two rules each: a path-and-header match and a default), and
// one Service with a three-endpoint EndpointSlice per route.
func scaleSnapshot(gateways, routes int) *translate.Snapshot {
	s := &translate.Snapshot{}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	uids := 0
	meta := func(ns, name string, i int) metav1.ObjectMeta {
		uids++
		return metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, UID: types.UID(fmt.Sprintf("uid-%d", uids)), ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(base.Add(time.Duration(i) * time.Second))}
	}
	s.GatewayClasses = append(s.GatewayClasses, &gwv1.GatewayClass{ObjectMeta: meta("", "tunnelgate", 0),
		Spec: gwv1.GatewayClassSpec{ControllerName: translate.DefaultControllerName}})
	from := gwv1.NamespacesFromAll
	for g := 0; g < gateways; g++ {
		host := gwv1.Hostname(fmt.Sprintf("*.g%d.example.com", g))
		s.Gateways = append(s.Gateways, &gwv1.Gateway{ObjectMeta: meta("infra", fmt.Sprintf("gw-%d", g), g),
			Spec: gwv1.GatewaySpec{GatewayClassName: "tunnelgate", Listeners: []gwv1.Listener{{
				Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80, Hostname: &host,
				AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &from}},
			}}}})
	}
	prefix, exact := gwv1.PathMatchPathPrefix, gwv1.HeaderMatchExact
	for r := 0; r < routes; r++ {
		ns := fmt.Sprintf("team-%d", r%100)
		name := fmt.Sprintf("app-%d", r)
		gwNS := gwv1.Namespace("infra")
		port := gwv1.PortNumber(80)
		api := "/api"
		backend := []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
			Name: gwv1.ObjectName(name), Port: &port}}}}
		s.HTTPRoutes = append(s.HTTPRoutes, &gwv1.HTTPRoute{ObjectMeta: meta(ns, name, r),
			Spec: gwv1.HTTPRouteSpec{
				CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Namespace: &gwNS, Name: gwv1.ObjectName(fmt.Sprintf("gw-%d", r%gateways))}}},
				Hostnames:       []gwv1.Hostname{gwv1.Hostname(fmt.Sprintf("app-%d.g%d.example.com", r, r%gateways))},
				Rules: []gwv1.HTTPRouteRule{
					{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &prefix, Value: &api},
						Headers: []gwv1.HTTPHeaderMatch{{Type: &exact, Name: "x-canary", Value: "1"}}}}, BackendRefs: backend},
					{BackendRefs: backend},
				},
			}})
		s.Services = append(s.Services, &corev1.Service{ObjectMeta: meta(ns, name, r),
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}})
		pname, pnum := "http", int32(8080)
		sl := &discoveryv1.EndpointSlice{ObjectMeta: meta(ns, name+"-abcde", r), AddressType: discoveryv1.AddressTypeIPv4,
			Ports: []discoveryv1.EndpointPort{{Name: &pname, Port: &pnum}}}
		sl.Labels = map[string]string{discoveryv1.LabelServiceName: name}
		for e := 0; e < 3; e++ {
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 1+r/65000, (r/250)%256, 1+e+(r%250))}})
		}
		s.EndpointSlices = append(s.EndpointSlices, sl)
	}
	return s
}

// warmCache returns the input of a cluster of routes (scaleSnapshot) as
// a running controller has it, every object carrying the status a
// translation gave it, and a Cache that translated it last, with that
// translation.
func warmCache(routes int) (*translate.Input, *translate.Cache, *translate.Output) {
	in := &translate.Input{Snapshot: *scaleSnapshot(50, routes), ControllerName: translate.DefaultControllerName, Now: goldenNow}
	cache := translate.NewCache()
	writeBackAll(&in.Snapshot, cache.Translate(in))
	return in, cache, cache.Translate(in)
}

// BenchmarkTranslate is the controller's work on the most common change
// there is, one EndpointSlice replaced (a pod restarted) as an informer
// delivers it: the translation of the whole cluster into a complete Output,
// then the diff that decides the status writes. The objects carry the
// statuses of a previous translation, as they do in a running cluster, so
// the Cache patches the last translation (patch.go).
func BenchmarkTranslate(b *testing.B) {
	for _, routes := range []int{500, 5000} {
		b.Run(fmt.Sprintf("routes=%d", routes), func(b *testing.B) {
			in, cache, prev := warmCache(routes)
			slices := in.EndpointSlices
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := i % len(slices)
				slices[k] = newRV(slices[k].DeepCopy())
				out := cache.Translate(in)
				if ch := translate.Diff(prev, out); !ch.Empty() {
					b.Fatalf("an endpoint change changed a status: %+v", ch)
				}
				mustReuse(b, cache, routes-1)
				prev = out
			}
		})
	}
}

// BenchmarkTranslateRouteChange is the controller's work when a route
// is edited (one HTTPRoute per op gets a new generation with a response
// header set to a new value), then the diff, which must name that route
// alone. The Cache patches the last translation (routepatch.go).
func BenchmarkTranslateRouteChange(b *testing.B) {
	for _, routes := range []int{500, 5000} {
		b.Run(fmt.Sprintf("routes=%d", routes), func(b *testing.B) {
			in, cache, prev := warmCache(routes)
			list := in.HTTPRoutes
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := i % len(list)
				r := newRV(list[k].DeepCopy())
				r.Generation++
				r.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterResponseHeaderModifier,
					ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "X-Op", Value: fmt.Sprint(i)}}}}}
				list[k] = r
				out := cache.Translate(in)
				if ch := translate.Diff(prev, out); len(ch.HTTPRoutes) != 1 || ch.HTTPRoutes[0].Name != r.Name || len(ch.Gateways) != 0 {
					b.Fatalf("an edit of route %s changed statuses %+v", r.Name, ch)
				}
				mustReuse(b, cache, routes-1)
				prev = out
			}
		})
	}
}

// BenchmarkTranslateRouteAdd is the controller's work when a route is
// created, then deleted (op by op, alternately): a copy of the first route
// under a name of its own and a hostname of its own, with the first's
// status (as after its own status write came back). The diff must name
// that route alone, besides the attached-route count of its Gateway. The
// Cache patches the last translation (routepatch.go).
func BenchmarkTranslateRouteAdd(b *testing.B) {
	for _, routes := range []int{500, 5000} {
		b.Run(fmt.Sprintf("routes=%d", routes), func(b *testing.B) {
			in, cache, prev := warmCache(routes)
			list := in.HTTPRoutes
			added := newUID(list[0].DeepCopy())
			added.Name += "-added"
			added.Spec.Hostnames = []gwv1.Hostname{"added.g0.example.com"}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%2 == 0 {
					in.HTTPRoutes = append(list[:len(list):len(list)], added)
				} else {
					in.HTTPRoutes = list
				}
				out := cache.Translate(in)
				if ch := translate.Diff(prev, out); len(ch.HTTPRoutes) != 1 && i%2 == 0 || len(ch.Gateways) != 1 {
					b.Fatalf("adding or deleting route %s changed statuses %+v", added.Name, ch)
				}
				mustReuse(b, cache, routes-1)
				if !translate.Patched(cache) {
					b.Fatalf("adding or deleting route %s took a full translation", added.Name)
				}
				prev = out
			}
		})
	}
}

// BenchmarkTranslateGatewayChange is the controller's work when a
// Gateway gains a listener no route attaches to yet, then loses it (op
// by op, alternately), as when a team prepares a new hostname. The diff
// must name that Gateway alone. The Cache translates in full, reusing
// every route's translation: the change does not reach them
// (epochChange).
func BenchmarkTranslateGatewayChange(b *testing.B) {
	for _, routes := range []int{500, 5000} {
		b.Run(fmt.Sprintf("routes=%d", routes), func(b *testing.B) {
			in, cache, prev := warmCache(routes)
			before := in.Gateways[0]
			after := newRV(before.DeepCopy())
			after.Generation++
			after.Spec.Listeners = append(after.Spec.Listeners, gwv1.Listener{Name: "extra", Protocol: gwv1.HTTPProtocolType, Port: 80,
				Hostname: ptr(gwv1.Hostname("*.extra.example.com"))})
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%2 == 0 {
					in.Gateways[0] = after
				} else {
					in.Gateways[0] = before
				}
				out := cache.Translate(in)
				if ch := translate.Diff(prev, out); len(ch.Gateways) != 1 || len(ch.HTTPRoutes) != 0 {
					b.Fatalf("a listener added or deleted changed statuses %+v", ch)
				}
				mustReuse(b, cache, routes)
				prev = out
			}
		})
	}
}

// mustReuse fails a benchmark whose Cache reused fewer than n routes in
// its last translation: it would measure another path than it says.
func mustReuse(b *testing.B, cache *translate.Cache, n int) {
	if reused, _ := cache.Stats(); reused < n {
		b.Fatalf("the Cache reused %d routes, want %d or more", reused, n)
	}
}

// BenchmarkTranslateRouteDelete is BenchmarkTranslateRouteAdd's delete
// alone: each op deletes the route added, untimed, before it. The diff
// must name that route and its Gateway's attached-route count.
func BenchmarkTranslateRouteDelete(b *testing.B) {
	for _, routes := range []int{500, 5000} {
		b.Run(fmt.Sprintf("routes=%d", routes), func(b *testing.B) {
			in, cache, _ := warmCache(routes)
			list := in.HTTPRoutes
			added := newUID(list[0].DeepCopy())
			added.Name += "-added"
			added.Spec.Hostnames = []gwv1.Hostname{"added.g0.example.com"}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				in.HTTPRoutes = append(list[:len(list):len(list)], added)
				prev := cache.Translate(in)
				in.HTTPRoutes = list
				b.StartTimer()
				out := cache.Translate(in)
				if ch := translate.Diff(prev, out); len(ch.HTTPRoutes) != 1 || len(ch.Gateways) != 1 {
					b.Fatalf("deleting route %s changed statuses %+v", added.Name, ch)
				}
				if !translate.Patched(cache) {
					b.Fatalf("deleting route %s took a full translation", added.Name)
				}
			}
		})
	}
}

// BenchmarkTranslateCold is BenchmarkTranslate without a Cache: every
// route translated from scratch, as on the controller's first sync or
// after a change to a Gateway, grant or policy.
func BenchmarkTranslateCold(b *testing.B) {
	for _, routes := range []int{500, 5000} {
		b.Run(fmt.Sprintf("routes=%d", routes), func(b *testing.B) {
			in := &translate.Input{Snapshot: *scaleSnapshot(50, routes), ControllerName: translate.DefaultControllerName, Now: goldenNow}
			writeBackAll(&in.Snapshot, translate.Translate(in))
			prev := translate.Translate(in)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				out := translate.Translate(in)
				translate.Diff(prev, out)
				prev = out
			}
		})
	}
}
