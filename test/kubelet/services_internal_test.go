package kubelet

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/tunnelgate/tunnelgate/test/testnet"
)

// The proxy's forwarding, without a cluster: listers fed by hand, a
// Service CIDR of the test's own (made local here, as newServiceProxy
// does, and removed by close) and backends on loopback. A client that half-closes
// still gets its answer; endpoints not ready are skipped and the ready
// ones taken in turn; no endpoint closes the connection at once; a
// removed Service closes its listener; close ends what is open.
func TestServiceProxyForwarding(t *testing.T) {
	svcs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	eps := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	// Not netns.Range: close removes its CIDR's route, and the network
	// namespace's own route must outlive the test (go test -count=2).
	cidr := netip.MustParsePrefix("10.245.0.0/16")
	if err := ip("route", "add", "local", cidr.String(), "dev", "lo"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sp := &serviceProxy{
		log: slog.New(slog.DiscardHandler), cidr: cidr,
		services: corelisters.NewServiceLister(svcs), slices: discoverylisters.NewEndpointSliceLister(eps),
		ctx: ctx, cancel: cancel, poke: make(chan struct{}, 1),
		listeners: map[listenKey]*serviceListener{}, conns: map[net.Conn]struct{}{},
	}
	defer sp.close() // again after the end: harmless

	// Backends that read to EOF, then answer with their name and what
	// they read.
	backend := func(name string) int32 {
		addr := testnet.RawServer(t, func(c net.Conn) {
			b, _ := io.ReadAll(c)
			io.WriteString(c, name+":"+string(b))
		})
		return int32(netip.MustParseAddrPort(addr).Port())
	}
	a, b := backend("a"), backend("b")
	clusterIP := netip.AddrFrom4([4]byte{10, 245, 0, 200})
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: corev1.ServiceSpec{ClusterIP: clusterIP.String(), Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP},
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
		}},
	}
	if err := svcs.Add(svc); err != nil {
		t.Fatal(err)
	}
	slice := func(name string, port int32, ready *bool) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}},
			// The slice port is found by the Service port's name.
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("other"), Port: ptr.To[int32](1)}, {Name: ptr.To("http"), Port: &port}},
		}
	}
	sp.sync()
	addr := netip.AddrPortFrom(clusterIP, 80).String()

	call := func() (string, error) {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return "", err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "hello"); err != nil {
			return "", err
		}
		if err := c.(*net.TCPConn).CloseWrite(); err != nil {
			return "", err
		}
		got, err := io.ReadAll(c)
		return string(got), err
	}

	// No endpoint: closed at once, nothing answered.
	start := time.Now()
	if got, err := call(); got != "" || time.Since(start) > time.Second {
		t.Errorf("no endpoint: %q, %v after %v; want closed at once", got, err, time.Since(start))
	}

	for _, s := range []*discoveryv1.EndpointSlice{
		slice("s1", a, nil), // ready unset counts as ready
		slice("s2", b, ptr.To(true)),
		slice("s3", backend("c"), ptr.To(false)), // never
	} {
		if err := eps.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	for range 4 {
		got, err := call()
		if err != nil {
			t.Fatal(err)
		}
		seen[got]++
	}
	if seen["a:hello"] != 2 || seen["b:hello"] != 2 {
		t.Errorf("answers %v; want a and b twice each (round robin, half-close passed on)", seen)
	}

	// The Service goes: its port no longer accepts.
	svcs.Delete(svc)
	sp.sync()
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("the removed Service's port still accepts")
	}

	// close ends a forwarded connection that is still open.
	svcs.Add(svc)
	sp.sync()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "x") // the backend waits for EOF, which does not come
	time.Sleep(100 * time.Millisecond)
	done := make(chan struct{})
	go func() { sp.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("close did not return with a connection open")
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("the client's connection after close: %v; want it closed", err)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("accepts after close")
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}
