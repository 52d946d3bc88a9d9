package chart

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/tunnelgate/tunnelgate/test/podapps"
)

// Rollouts lose nothing: the chart's Deployments run as Pods on the real
// node (kube-controller-manager's ReplicaSets, EndpointSlices and
// rollouts, the kubelet's probes and its stopping of Pods), every request
// goes edge → cloudflared (the stand-in) in a proxy Pod → the proxy's
// origin listener → a backend Pod, and while load runs the proxy
// Deployment and then the controller Deployment are rolled (as `kubectl
// rollout restart` does). No request may fail, and a visitor pinned by
// session persistence keeps its backend Pod whichever proxy Pod serves it,
// old or new. While no controller runs, a new proxy Pod's startup probe
// fails (it has no config), and the kubelet holds its cloudflared back
// (the proxy is a native sidecar): the edge never sees it.
func TestRolloutsLoseNoRequest(t *testing.T) {
	r := startRig(t, "roll")
	r.dumpPodsOnFailure(t, r.ns)
	kube, edge, ns, class := r.kube, r.edge, r.ns, r.class
	const app = "roll-app"
	r.apply(t, echoSite(app, class, 2)+fmt.Sprintf(`---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: pin, namespace: %s}
spec:
  parentRefs: [{name: gw}]
  hostnames: [pin.example.com]
  rules:
  - backendRefs: [{name: app, port: 80}]
    sessionPersistence: {type: Cookie, cookie: {name: pin}}
`, app))

	controller, proxy := r.controller(), r.proxy()
	for _, d := range []string{controller, proxy} {
		waitRolledOut(t, kube, ns, d, 3*time.Minute)
	}
	visitor := edge.Client(10 * time.Second)
	eventually(t, 60*time.Second, "the route through the edge", func() error {
		if n := len(edge.Connectors()); n != 2 {
			return fmt.Errorf("%d connectors registered, want the 2 proxy Pods'", n)
		}
		return visitAppOnce(visitor)
	})

	// A session pinned by one proxy Pod holds through the other, and
	// through Pods that replaced both: every proxy signs with the session
	// key of the Secret the chart made, handed out by the controllers.
	session := startSession(t, visitor)
	session.check(t, "through both proxy Pods")

	load := startLoad(visitor, 4, 200_000)
	phase := func(what string, do func()) {
		before := load.counts()
		do()
		time.Sleep(2 * time.Second) // and traffic through the Pods it left
		session.check(t, "after the "+what)
		after := load.counts()
		t.Logf("%s: %d requests sent, %d failed", what, after.sent-before.sent, after.failed-before.failed)
		if after.sent-before.sent < 100 {
			t.Errorf("%s: only %d requests sent; the load is not running", what, after.sent-before.sent)
		}
	}
	phase("rollout of the proxies", func() {
		connectors := edge.Connectors()
		restart(t, kube, ns, proxy)
		waitRolledOut(t, kube, ns, proxy, 3*time.Minute)
		if slices.ContainsFunc(edge.Connectors(), func(c string) bool { return slices.Contains(connectors, c) }) {
			t.Errorf("connectors %v after the proxy rollout, %v before: want only new Pods", edge.Connectors(), connectors)
		}
	})
	phase("rollout of the controllers", func() {
		restart(t, kube, ns, controller)
		waitRolledOut(t, kube, ns, controller, 3*time.Minute)
	})
	// A new proxy Pod that cannot get a config (no controller answers, and
	// its cache volume starts empty) must not take the edge's requests; the
	// rollout waits for it while the old Pods serve.
	phase("rollout of the proxies while no controller runs", func() {
		scale(t, kube, ns, controller, 0)
		waitRolledOut(t, kube, ns, controller, time.Minute)
		old := podsOf(t, r, "proxy")
		restart(t, kube, ns, proxy)
		checkCloudflaredHeldBack(t, r, old, 10*time.Second)
		scale(t, kube, ns, controller, 2)
		waitRolledOut(t, kube, ns, controller, 3*time.Minute)
		waitRolledOut(t, kube, ns, proxy, 3*time.Minute)
	})
	total := load.stop()
	t.Logf("in all: %d requests sent, %d failed; connectors now %v", total.sent, total.failed, edge.Connectors())
	if total.failed != 0 || total.sent < 100 {
		t.Fatalf("%d of %d requests failed; first failures:\n%s", total.failed, total.sent, strings.Join(load.firstErrors(), "\n"))
	}
}

// listenAndServe serves h on host at a free port and returns its http://
// URL and the function that stops it.
func listenAndServe(t testing.TB, host string, h http.Handler) (url string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { srv.Close() }
}

func mustParseURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// visitAppOnce is one visitor's request, answered by a backend Pod.
func visitAppOnce(c *http.Client) error {
	echo, err := visitEcho(c, "http://app.example.com/roll")
	if err == nil && echo.Path != "/roll" {
		err = fmt.Errorf("answered for path %q, want /roll", echo.Path)
	}
	return err
}

// visitEcho is a visitor's request for url through the edge (with Host
// host, if given), answered 200 by a Pod of an echo app (echoApp).
func visitEcho(c *http.Client, url string, host ...string) (*podapps.EchoResponse, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if len(host) > 0 {
		req.Host = host[0]
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	var echo podapps.EchoResponse
	if res.StatusCode != http.StatusOK || json.Unmarshal(b, &echo) != nil || !strings.HasPrefix(echo.Pod, "app-") {
		return nil, fmt.Errorf("%s: %s: %.200s", url, res.Status, b)
	}
	return &echo, nil
}

// session is a visitor pinned to a backend Pod by a session cookie.
type session struct {
	c           *http.Client
	cookie, pod string
}

func startSession(t *testing.T, c *http.Client) *session {
	t.Helper()
	s := &session{c: c}
	pod, res, err := s.get()
	if err != nil {
		t.Fatal(err)
	}
	for _, ck := range res.Cookies() {
		if ck.Name == "pin" {
			s.cookie = ck.Value
		}
	}
	if s.cookie == "" {
		t.Fatalf("the first request to pin.example.com set no session cookie: %v", res.Header)
	}
	s.pod = pod
	return s
}

// get requests pin.example.com with the session's cookie, if any, and
// returns the backend Pod that answered.
func (s *session) get() (string, *http.Response, error) {
	req, _ := http.NewRequest("GET", "http://pin.example.com/", nil)
	if s.cookie != "" {
		req.AddCookie(&http.Cookie{Name: "pin", Value: s.cookie})
	}
	res, err := s.c.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer res.Body.Close()
	var echo podapps.EchoResponse
	if err := json.NewDecoder(res.Body).Decode(&echo); err != nil || res.StatusCode != http.StatusOK {
		return "", nil, fmt.Errorf("pin.example.com: %s (%v)", res.Status, err)
	}
	return echo.Pod, res, nil
}

// check sends 40 requests (the edge alternates the connectors, so both
// proxy Pods serve them) and wants every one on the pinned Pod.
func (s *session) check(t *testing.T, when string) {
	t.Helper()
	for i := range 40 {
		pod, _, err := s.get()
		if err != nil || pod != s.pod {
			t.Errorf("%s: request %d of the session reached %q (%v); want %q, where it was pinned", when, i, pod, err, s.pod)
			return
		}
	}
}

// load is visitors' requests sent by a few workers, each at most one per
// millisecond and bounded in count.
type load struct {
	sent, failed atomic.Int64
	mu           sync.Mutex
	errs         []string
	done         chan struct{}
	stopOnce     sync.Once
	wg           sync.WaitGroup
}

type loadCounts struct{ sent, failed int64 }

func startLoad(c *http.Client, workers, perWorker int) *load {
	return startLoadOf(func() error { return visitAppOnce(c) }, workers, perWorker)
}

// startLoadOf is startLoad with another visit.
func startLoadOf(visit func() error, workers, perWorker int) *load {
	l := &load{done: make(chan struct{})}
	for range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for range perWorker {
				select {
				case <-l.done:
					return
				default:
				}
				time.Sleep(time.Millisecond)
				l.sent.Add(1)
				if err := visit(); err != nil {
					l.failed.Add(1)
					l.mu.Lock()
					if len(l.errs) < 10 {
						l.errs = append(l.errs, time.Now().Format("15:04:05.000")+" "+err.Error())
					}
					l.mu.Unlock()
				}
			}
		}()
	}
	return l
}

func (l *load) counts() loadCounts { return loadCounts{l.sent.Load(), l.failed.Load()} }

// stop stops the workers (at once if called again) and returns the
// counts.
func (l *load) stop() loadCounts {
	l.stopOnce.Do(func() { close(l.done) })
	l.wg.Wait()
	return l.counts()
}

func (l *load) firstErrors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errs...)
}

// restart rolls a Deployment as `kubectl rollout restart` does.
func restart(t *testing.T, kube kubernetes.Interface, ns, name string) {
	t.Helper()
	patchDeployment(t, kube, ns, name, fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`,
		time.Now().Format(time.RFC3339Nano)))
}

// scale sets a Deployment's replicas.
func scale(t *testing.T, kube kubernetes.Interface, ns, name string, replicas int) {
	t.Helper()
	patchDeployment(t, kube, ns, name, fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
}

func patchDeployment(t *testing.T, kube kubernetes.Interface, ns, name, patch string) {
	t.Helper()
	if _, err := kube.AppsV1().Deployments(ns).Patch(t.Context(), name, types.StrategicMergePatchType,
		[]byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitRolledOut waits until every replica of the Deployment runs its
// current template, is available, and no older Pod is left.
func waitRolledOut(t testing.TB, kube kubernetes.Interface, ns, name string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "rollout of "+name, func() error {
		d, err := kube.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want, s := *d.Spec.Replicas, d.Status
		if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != want || s.Replicas != want ||
			s.AvailableReplicas != want || s.UnavailableReplicas != 0 {
			return fmt.Errorf("status %+v, want %d replicas updated and available", s, want)
		}
		sel := metav1.FormatLabelSelector(d.Spec.Selector)
		pods, err := kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return err
		}
		if int32(len(pods.Items)) != want {
			return fmt.Errorf("%d Pods, want %d (old ones still terminating)", len(pods.Items), want)
		}
		return nil
	})
}

// checkCloudflaredHeldBack watches, for d, the proxy Pods that are not
// among old (those a rollout just made) while no controller runs: each
// one's proxy, a native sidecar, must be running and not yet started
// (its startup probe fails without a config), its cloudflared not
// running, since the kubelet starts it only after the sidecar's startup
// probe passes; so no new Pod connects to the edge. It fails the test if
// no new Pod's proxy ran at all in that time.
func checkCloudflaredHeldBack(t *testing.T, r *rig, old []corev1.Pod, d time.Duration) {
	t.Helper()
	seen := map[string]bool{}
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		for _, p := range podsOf(t, r, "proxy") {
			if slices.ContainsFunc(old, func(o corev1.Pod) bool { return o.UID == p.UID }) {
				continue
			}
			for _, cs := range p.Status.InitContainerStatuses {
				if cs.Name != "proxy" || cs.State.Running == nil {
					continue
				}
				seen[p.Name] = true
				if cs.Started != nil && *cs.Started {
					t.Errorf("new proxy Pod %s: its proxy passed its startup probe with no controller running", p.Name)
				}
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == "cloudflared" && (cs.State.Running != nil || cs.State.Terminated != nil) {
					t.Errorf("new proxy Pod %s: cloudflared %+v before its proxy's startup probe passed", p.Name, cs.State)
				}
			}
			if slices.Contains(r.edge.Connectors(), p.Name) {
				t.Errorf("new proxy Pod %s connected to the edge without a config", p.Name)
			}
		}
		if t.Failed() {
			return
		}
	}
	if len(seen) == 0 {
		t.Errorf("no new proxy Pod's proxy ran within %v of the restart", d)
	}
	t.Logf("while no controller ran, proxy Pods %v ran their proxy, unstarted, and no cloudflared", slices.Sorted(maps.Keys(seen)))
}
