package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// recordedEvents keeps the events a controller records.
type recordedEvents []corev1.ObjectReference

func (r *recordedEvents) Event(o runtime.Object, _, _, _ string) {
	*r = append(*r, *o.(*corev1.ObjectReference))
}

// TCPRoutes and TLSRoutes are watched when the API server serves them:
// they are in the snapshot, a change to one asks for a sync, events on
// them reference the object, and the statuses a translation gives them
// are written, merged with other controllers' entries.
func TestStreamRoutesWatchedAndWritten(t *testing.T) {
	const us, them = "tunnelgate.dev/controller", "example.com/other"
	parent := func(controller string) gwv1.RouteParentStatus {
		return gwv1.RouteParentStatus{ParentRef: gwv1.ParentReference{Name: "gw"}, ControllerName: gwv1.GatewayController(controller),
			Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.Unix(1, 0)}}}
	}
	tcp := &gwv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "uid-db"}}
	tcp.Status.Parents = []gwv1.RouteParentStatus{parent(them)}
	tls := &gwv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tls", UID: "uid-tls"}}
	kube := kubefake.NewClientset()
	kube.Resources = []*metav1.APIResourceList{{GroupVersion: gwv1.GroupVersion.String(),
		APIResources: []metav1.APIResource{{Name: "tcproutes"}, {Name: "tlsroutes"}}}}
	gw := gwfake.NewClientset(tcp, tls)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvrCRDs: "CustomResourceDefinitionList"})
	var events recordedEvents
	c, err := New(Options{Kube: kube, Gateway: gw, Dynamic: dyn, ControllerName: us, Publisher: versionPublisher{}, Events: &events})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.w.start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.w.synced()...) {
		t.Fatal("caches did not sync")
	}

	snap := c.w.snapshot()
	if len(snap.TCPRoutes) != 1 || snap.TCPRoutes[0].Name != "db" || len(snap.TLSRoutes) != 1 || snap.TLSRoutes[0].Name != "tls" {
		t.Fatalf("snapshot has TCPRoutes %v and TLSRoutes %v; want db and tls", snap.TCPRoutes, snap.TLSRoutes)
	}

	for c.queue.Len() > 0 { // the adds of the initial list
		k, _ := c.queue.Get()
		c.queue.Done(k)
	}
	if _, err := gw.GatewayV1().TLSRoutes("ns").Create(ctx, &gwv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for c.queue.Len() == 0 {
		if ctx.Err() != nil {
			t.Fatal("a new TLSRoute asked for no sync")
		}
		time.Sleep(time.Millisecond)
	}

	c.recordEvents([]translate.Event{{Kind: "TCPRoute", Namespace: "ns", Name: "db", Type: "Warning", Reason: "BackendNotFound"},
		{Kind: "TLSRoute", Namespace: "ns", Name: "tls", Type: "Warning", Reason: "BackendNotFound"}})
	if len(events) != 2 || events[0].UID != "uid-db" || events[0].APIVersion != "gateway.networking.k8s.io/v1" || events[1].UID != "uid-tls" {
		t.Errorf("events %+v; want one on each route, with its UID and API version", events)
	}

	dbKey, tlsKey := types.NamespacedName{Namespace: "ns", Name: "db"}, types.NamespacedName{Namespace: "ns", Name: "tls"}
	out := &translate.Output{
		TCPRoutes: map[types.NamespacedName][]gwv1.RouteParentStatus{dbKey: {parent(us)}},
		TLSRoutes: map[types.NamespacedName][]gwv1.RouteParentStatus{tlsKey: {parent(us)}},
	}
	wrote, failed, err := c.writeStatuses(ctx, nil, out, func() bool { return false })
	if wrote != 2 || failed != 0 || err != nil {
		t.Fatalf("writeStatuses wrote %d, failed %d, %v; want both routes written", wrote, failed, err)
	}
	gotTCP, err := gw.GatewayV1().TCPRoutes("ns").Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ps := gotTCP.Status.Parents; len(ps) != 2 || string(ps[0].ControllerName) != them || string(ps[1].ControllerName) != us {
		t.Errorf("TCPRoute parents %+v; want the other controller's kept, then ours", ps)
	}
	gotTLS, err := gw.GatewayV1().TLSRoutes("ns").Get(ctx, "tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ps := gotTLS.Status.Parents; len(ps) != 1 || string(ps[0].ControllerName) != us {
		t.Errorf("TLSRoute parents %+v; want ours", ps)
	}
}
