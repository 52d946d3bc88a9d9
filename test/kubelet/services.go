package kubelet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/utils/ptr"
)

// Services. There is no kube-proxy: the Kubelet proxies Services itself,
// in userspace, in the test's network namespace, which is where a Pod's
// packets to any address off the bridge arrive (the bridge is its default
// route).
//
// The whole Service CIDR (Options.ServiceCIDR, kubeenv.ServiceCIDR by
// default) is local there (`ip route add local <cidr> dev lo`), so a
// listener can bind any ClusterIP. For every Service with a ClusterIP
// (headless ones have none) and every TCP port of it, the Kubelet listens
// on ClusterIP:port and forwards each connection it accepts to one of the
// Service's ready endpoints, round robin: those of the EndpointSlices
// labelled kubernetes.io/service-name=<service> whose conditions.ready is
// not false, at the slice port named as the Service port. Endpoints are
// looked up per connection, so a change applies to the next one; a
// connection with no endpoint, or whose endpoint does not accept within
// dialTimeout, is closed at once. Listeners follow the Services: a new
// Service or port is listened on, a removed one closed (connections
// already forwarded go on).
//
// The kubernetes Service in namespace default has no endpoints here (the
// API server runs with --endpoint-reconciler-type=none, see test/kubeenv);
// it forwards to the API server the Kubelet was started with, whose
// certificate kubeenv issues for the Service's ClusterIP.
//
// UDP ports (DNS, say) are not proxied, nor are NodePorts, external IPs,
// session affinity or traffic policies.

// dialTimeout bounds how long a forwarded connection waits for its
// endpoint to accept.
const dialTimeout = 5 * time.Second

// serviceProxy is the userspace kube-proxy.
type serviceProxy struct {
	log       *slog.Logger
	cidr      netip.Prefix
	apiServer string // host:port of the API server, for default/kubernetes
	services  corelisters.ServiceLister
	slices    discoverylisters.EndpointSliceLister

	ctx    context.Context // cancelled by close, ending dials under way
	cancel context.CancelFunc
	poke   chan struct{} // a Service changed: reconcile the listeners

	mu        sync.Mutex
	closed    bool
	listeners map[listenKey]*serviceListener
	conns     map[net.Conn]struct{} // forwarded connections, both ends
	wg        sync.WaitGroup        // accept loops and forwarded connections
}

// listenKey is one Service port at one address; a change of any part is a
// new listener.
type listenKey struct {
	namespace, name, port string // port is the Service port's name
	addr                  netip.AddrPort
}

func (k listenKey) String() string {
	return fmt.Sprintf("%s/%s port %q at %s", k.namespace, k.name, k.port, k.addr)
}

type serviceListener struct {
	key  listenKey
	ln   net.Listener
	next atomic.Uint32 // round robin over the endpoints
}

// newServiceProxy makes cidr local to the test's network namespace. The
// listers must be of informers that are started and synced before run.
func newServiceProxy(log *slog.Logger, cidr netip.Prefix, apiHost string, services corelisters.ServiceLister, slices discoverylisters.EndpointSliceLister) (*serviceProxy, error) {
	apiServer, err := hostPort(apiHost)
	if err != nil {
		return nil, fmt.Errorf("kubelet: the API server's address in rest.Config.Host %q: %w", apiHost, err)
	}
	cidr = cidr.Masked()
	if err := ip("route", "add", "local", cidr.String(), "dev", "lo"); err != nil {
		return nil, fmt.Errorf("kubelet: making the Service CIDR local, so Services can be proxied (is another Kubelet running in this network namespace, or does Options.ServiceCIDR overlap a route?): %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &serviceProxy{
		log: log, cidr: cidr, apiServer: apiServer, services: services, slices: slices,
		ctx: ctx, cancel: cancel, poke: make(chan struct{}, 1),
		listeners: map[listenKey]*serviceListener{}, conns: map[net.Conn]struct{}{},
	}, nil
}

// hostPort is the host:port a rest.Config's Host names.
func hostPort(host string) (string, error) {
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		return "", err
	}
	if u.Hostname() == "" {
		return "", errors.New("no host")
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// changed asks run to reconcile the listeners; an informer event handler.
func (sp *serviceProxy) changed() {
	select {
	case sp.poke <- struct{}{}:
	default: // one is pending, and it will see this change too
	}
}

// run reconciles the listeners whenever a Service changes, until ctx ends.
func (sp *serviceProxy) run(ctx context.Context) {
	sp.sync()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sp.poke:
			sp.sync()
		}
	}
}

// sync listens on every Service port there is and closes the listeners of
// those that are gone.
func (sp *serviceProxy) sync() {
	want := map[listenKey]bool{}
	svcs, err := sp.services.List(labels.Everything())
	if err != nil {
		sp.log.Warn("listing Services", "err", err)
		return
	}
	for _, s := range svcs {
		addr, ok := clusterIP(s)
		if !ok {
			continue
		}
		for _, port := range s.Spec.Ports {
			if port.Protocol != "" && port.Protocol != corev1.ProtocolTCP {
				continue
			}
			want[listenKey{s.Namespace, s.Name, port.Name, netip.AddrPortFrom(addr, uint16(port.Port))}] = true
		}
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.closed {
		return
	}
	// Close first, so a port that moved to another Service (or name) can
	// be bound again below.
	for key, l := range sp.listeners {
		if !want[key] {
			l.ln.Close()
			delete(sp.listeners, key)
			sp.log.Debug("service port closed", "service", key)
		}
	}
	for key := range want {
		if sp.listeners[key] != nil {
			continue
		}
		ln, err := net.Listen("tcp", key.addr.String())
		if err != nil {
			sp.log.Warn("cannot proxy a Service port (is its ClusterIP inside kubelet.Options.ServiceCIDR, the API server's --service-cluster-ip-range?)",
				"service", key, "serviceCIDR", sp.cidr, "err", err)
			continue
		}
		l := &serviceListener{key: key, ln: ln}
		sp.listeners[key] = l
		sp.wg.Add(1)
		go sp.serve(l)
		sp.log.Debug("service port listening", "service", key)
	}
}

// clusterIP is a Service's ClusterIP, if it has one.
func clusterIP(s *corev1.Service) (netip.Addr, bool) {
	if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == corev1.ClusterIPNone {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(s.Spec.ClusterIP)
	return a, err == nil
}

// serve accepts connections until the listener is closed.
func (sp *serviceProxy) serve(l *serviceListener) {
	defer sp.wg.Done()
	for {
		c, err := l.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil { // out of file descriptors, say: let some close
			sp.log.Warn("accepting a Service connection", "service", l.key, "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		sp.wg.Add(1)
		go func() {
			defer sp.wg.Done()
			sp.forward(l, c)
		}()
	}
}

// forward connects client to the next endpoint of l's Service port and
// copies both ways until both sides have finished.
func (sp *serviceProxy) forward(l *serviceListener, client net.Conn) {
	if !sp.track(client) {
		return
	}
	defer sp.untrack(client)
	targets := sp.endpoints(l.key)
	if len(targets) == 0 {
		sp.log.Info("no ready endpoint for a Service: closing the connection", "service", l.key, "client", client.RemoteAddr())
		return
	}
	target := targets[int(l.next.Add(1)-1)%len(targets)]
	d := net.Dialer{Timeout: dialTimeout}
	backend, err := d.DialContext(sp.ctx, "tcp", target)
	if err != nil {
		sp.log.Info("Service endpoint did not accept: closing the connection", "service", l.key, "endpoint", target, "err", err)
		return
	}
	if !sp.track(backend) {
		return
	}
	defer sp.untrack(backend)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(backend, client)
	}()
	pipe(client, backend)
	<-done
}

// pipe copies src to dst. At src's end it half-closes dst, so the other
// side reads EOF and may still answer; on an error it closes both, so the
// other direction ends too.
func pipe(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if err == nil {
		if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
			return
		}
	}
	dst.Close()
	src.Close()
}

// endpoints are the addresses a connection to key may go to, sorted so
// the round robin goes through them in turn.
func (sp *serviceProxy) endpoints(key listenKey) []string {
	if key.namespace == metav1.NamespaceDefault && key.name == "kubernetes" {
		return []string{sp.apiServer}
	}
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: key.name})
	eps, err := sp.slices.EndpointSlices(key.namespace).List(sel)
	if err != nil {
		sp.log.Warn("listing EndpointSlices", "service", key, "err", err)
		return nil
	}
	var out []string
	for _, s := range eps {
		if s.AddressType == discoveryv1.AddressTypeFQDN {
			continue
		}
		port := -1
		for _, p := range s.Ports {
			proto := corev1.ProtocolTCP
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			if p.Port != nil && ptr.Deref(p.Name, "") == key.port && proto == corev1.ProtocolTCP {
				port = int(*p.Port)
			}
		}
		if port < 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready || len(e.Addresses) == 0 {
				continue
			}
			out = append(out, net.JoinHostPort(e.Addresses[0], strconv.Itoa(port)))
		}
	}
	slices.SortFunc(out, cmp.Compare)
	return slices.Compact(out)
}

// track registers a forwarded connection for close; false (and c closed)
// when the proxy is closed already.
func (sp *serviceProxy) track(c net.Conn) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.closed {
		c.Close()
		return false
	}
	sp.conns[c] = struct{}{}
	return true
}

func (sp *serviceProxy) untrack(c net.Conn) {
	c.Close()
	sp.mu.Lock()
	delete(sp.conns, c)
	sp.mu.Unlock()
}

// kubernetesService is the kubernetes Service's ClusterIP and port, where
// Pods reach the API server; false while the informer has not seen it.
func (sp *serviceProxy) kubernetesService() (netip.AddrPort, bool) {
	s, err := sp.services.Services(metav1.NamespaceDefault).Get("kubernetes")
	if err != nil {
		return netip.AddrPort{}, false
	}
	addr, ok := clusterIP(s)
	if !ok || len(s.Spec.Ports) == 0 {
		return netip.AddrPort{}, false
	}
	port := s.Spec.Ports[0].Port
	for _, p := range s.Spec.Ports {
		if p.Name == "https" {
			port = p.Port
		}
	}
	return netip.AddrPortFrom(addr, uint16(port)), true
}

// close stops listening, closes every forwarded connection, waits for
// their goroutines and removes the route. run must have returned.
func (sp *serviceProxy) close() {
	sp.cancel()
	sp.mu.Lock()
	sp.closed = true
	for key, l := range sp.listeners {
		l.ln.Close()
		delete(sp.listeners, key)
	}
	for c := range sp.conns {
		c.Close()
	}
	sp.mu.Unlock()
	sp.wg.Wait()
	if err := ip("route", "del", "local", sp.cidr.String(), "dev", "lo"); err != nil {
		sp.log.Warn("removing the Service CIDR's route", "err", err)
	}
}
