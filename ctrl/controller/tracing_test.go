package controller

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/tunnelgate/tunnelgate/ctrl/configserver"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

type versionPublisher struct{}

func (versionPublisher) Publish(*proxycfg.Config) string { return "v-test" }

func (versionPublisher) PublishPlanes(map[string]configserver.Plane) {}

// A leading sync is a span with a child per step; a status write that
// fails shows on the status write span, which links to the sync that
// handed it its translation, and is counted; the duration histogram gets
// the sync.
func TestSyncTraced(t *testing.T) {
	const us = "tunnelgate.dev/controller"
	class := func(name string) *gwv1.GatewayClass {
		return &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: gwv1.GatewayClassSpec{ControllerName: us}}
	}
	kube := kubefake.NewClientset()
	kube.Resources = []*metav1.APIResourceList{{GroupVersion: gwv1.GroupVersion.String(),
		APIResources: []metav1.APIResource{{Name: "gatewayclasses"}}}}
	gw := gwfake.NewClientset(class("good"), class("broken"))
	gw.PrependReactor("update", "gatewayclasses", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u := a.(k8stesting.UpdateAction)
		if u.GetSubresource() == "status" && u.GetObject().(*gwv1.GatewayClass).Name == "broken" {
			return true, nil, apierrors.NewInternalError(errors.New("etcd is away"))
		}
		return false, nil, nil
	})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvrCRDs: "CustomResourceDefinitionList"})

	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	c, err := New(Options{Kube: kube, Gateway: gw, Dynamic: dyn, ControllerName: us, SyncInterval: time.Millisecond,
		Publisher: versionPublisher{}, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")); err != nil {
		t.Fatal(err)
	}
	c.SetLeader(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for c.Stats.StatusErrors.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no failed status write pass within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	all := spans.GetSpans()
	attrs := func(s tracetest.SpanStub) map[string]string {
		m := map[string]string{}
		for _, kv := range s.Attributes {
			m[string(kv.Key)] = kv.Value.String()
		}
		return m
	}
	syncs := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range all {
		if s.Name == spanSync {
			syncs[s.SpanContext.SpanID()] = s
		}
	}
	var w tracetest.SpanStub
	for _, s := range all {
		if s.Name == spanStatusWrites && s.Status.Code == codes.Error {
			w = s
			break
		}
	}
	if w.Name == "" {
		t.Fatalf("no failed %s span among %d spans", spanStatusWrites, len(all))
	}
	if a := attrs(w); a["tunnelgate.sync.status_errors"] != "1" || a["tunnelgate.sync.status_writes"] == "" {
		t.Errorf("status write span attributes %v", a)
	}
	if len(w.Events) != 1 || w.Events[0].Name != "exception" {
		t.Errorf("status write span events %+v; want the failed write recorded", w.Events)
	}
	if len(w.Links) != 1 {
		t.Fatalf("status write span links %+v, want the sync that handed it", w.Links)
	}
	sync, ok := syncs[w.Links[0].SpanContext.SpanID()]
	if !ok {
		t.Fatalf("the status write span links to %v, not a sync span", w.Links[0].SpanContext.SpanID())
	}
	if a := attrs(sync); a["tunnelgate.config.version"] != "v-test" || a["tunnelgate.sync.leader"] != "true" {
		t.Errorf("sync span attributes %v", a)
	}
	children := map[string]tracetest.SpanStub{}
	for _, s := range all {
		if s.Parent.SpanID() == sync.SpanContext.SpanID() {
			children[s.Name] = s
		}
	}
	names := []string{}
	for n := range children {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{spanPublish, spanTranslate}; !slices.Equal(names, want) {
		t.Errorf("children of the sync span %v, want %v", names, want)
	}
	if a := attrs(children[spanTranslate]); a["tunnelgate.config.routes"] != "0" {
		t.Errorf("translate span attributes %v", a)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var count uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == "tunnelgate.controller.sync.duration" {
				for _, p := range h.DataPoints {
					count += p.Count
				}
			}
		}
	}
	if syncs := c.Stats.Syncs.Load(); count == 0 || count != uint64(syncs) {
		t.Errorf("sync duration histogram holds %d syncs; %d ran", count, syncs)
	}
}
