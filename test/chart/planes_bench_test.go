package chart

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkPlanesToProgrammed applies $PLANES (default 100) Gateways at
// once, each with a plane and a tunnel of its own and an HTTPRoute, on the
// chart installed on the real node (test/realnode; the connector and edge
// stand-ins, the Cloudflare API fake). It reports the
// seconds from the apply until every Gateway is Programmed (its tunnel's
// document applied, a proxy of its plane ready), and the controller's
// resident and heap memory then. One run; `make bench-planes` runs it.
func BenchmarkPlanesToProgrammed(b *testing.B) {
	n := 100
	if v := os.Getenv("PLANES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("PLANES=%q: want a positive number", v)
		}
	}
	// The planes' Pods ask for no CPU, so that a hundred of them fit on
	// the node (2 CPUs here), whose kubelet runs at most 110 Pods.
	r := startRig(b, "bench", "controller.replicas=1", "proxy.replicas=1",
		"proxy.resources.requests.cpu=0", "cloudflared.resources.requests.cpu=0")
	waitRolledOut(b, r.kube, r.ns, r.controller(), 3*time.Minute)
	var docs strings.Builder
	fmt.Fprintf(&docs, `
apiVersion: v1
kind: Namespace
metadata: {name: tenants}
%s`, echoApp("tenants", 1))
	for i := range n {
		fmt.Fprintf(&docs, `---
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayConfig
metadata: {name: plane-%[1]d, namespace: tenants}
spec:
  dataPlane: Dedicated
  replicas: 1
  tunnel: {name: tenant-%[1]d}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw-%[1]d, namespace: tenants}
spec:
  gatewayClassName: %[2]s
  infrastructure:
    parametersRef: {group: tunnelgate.dev, kind: GatewayConfig, name: plane-%[1]d}
  listeners: [{name: http, protocol: HTTP, port: 80, hostname: "t%[1]d.example.com"}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web-%[1]d, namespace: tenants}
spec:
  parentRefs: [{name: gw-%[1]d}]
  rules: [{backendRefs: [{name: app, port: 80}]}]
`, i, r.class)
	}

	b.ResetTimer()
	start := time.Now()
	r.apply(b, docs.String())
	applied := time.Since(start)
	programmed := 0
	eventually(b, 20*time.Minute, fmt.Sprintf("%d Gateways Programmed", n), func() error {
		list, err := r.gw.GatewayV1().Gateways("tenants").List(b.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for _, g := range list.Items {
			if meta.IsStatusConditionTrue(g.Status.Conditions, "Programmed") {
				ready++
			}
		}
		if ready != programmed {
			programmed = ready
			b.Logf("%6.1fs: %d of %d Programmed", time.Since(start).Seconds(), ready, n)
		}
		if ready < n {
			return fmt.Errorf("%d of %d Programmed", ready, n)
		}
		return nil
	})
	elapsed := time.Since(start)
	b.StopTimer()

	m := controllerMetrics(b, r)
	b.ReportMetric(elapsed.Seconds(), "s-to-programmed")
	b.ReportMetric(m["process_resident_memory_bytes"]/(1<<20), "controller-rss-MiB")
	b.ReportMetric(m["go_memstats_heap_alloc_bytes"]/(1<<20), "controller-heap-MiB")
	b.Logf("%d planes: apply took %s, all Programmed after %s; controller RSS %.0f MiB, heap %.0f MiB, %d connectors",
		n, applied.Round(time.Millisecond), elapsed.Round(time.Second), m["process_resident_memory_bytes"]/(1<<20),
		m["go_memstats_heap_alloc_bytes"]/(1<<20), len(r.edge.Connectors()))
	b.ReportMetric(deleteAllGateways(b, r, n).Seconds(), "s-to-deleted")
}

// tenantHost matches the benchmark's hostnames and their ownership
// records.
var tenantHost = regexp.MustCompile(`(^|\.)t[0-9]+\.example\.com$`)

// deleteAllGateways deletes the n Gateways of the namespace tenants at
// once and times them until each is gone, which the controller's
// finalizer holds until its plane is deleted, its DNS records removed and
// its tunnel emptied.
func deleteAllGateways(b *testing.B, r *rig, n int) time.Duration {
	start := time.Now()
	if err := r.gw.GatewayV1().Gateways("tenants").DeleteCollection(b.Context(), metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		b.Fatal(err)
	}
	eventually(b, 20*time.Minute, fmt.Sprintf("%d Gateways deleted", n), func() error {
		list, err := r.gw.GatewayV1().Gateways("tenants").List(b.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		if left := len(list.Items); left > 0 {
			return fmt.Errorf("%d of %d Gateways left", left, n)
		}
		for _, rec := range r.fake.Records("zone") {
			if tenantHost.MatchString(rec.Name) {
				return fmt.Errorf("DNS record %s %s left", rec.Type, rec.Name)
			}
		}
		return nil
	})
	took := time.Since(start)
	b.Logf("%d Gateways deleted, their planes and DNS records with them, after %s", n, took.Round(time.Second))
	return took
}

// controllerMetrics scrapes the controller Pod's unlabelled gauges.
func controllerMetrics(tb testing.TB, r *rig) map[string]float64 {
	tb.Helper()
	pods, err := r.kube.CoreV1().Pods(r.ns).List(tb.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=controller"})
	if err != nil || len(pods.Items) == 0 {
		tb.Fatalf("the controller Pod: %v", err)
	}
	res, err := http.Get("http://" + net.JoinHostPort(pods.Items[0].Status.PodIP, "9902") + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] = v
		}
	}
	return out
}
