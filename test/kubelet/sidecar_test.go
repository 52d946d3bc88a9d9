package kubelet_test

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tunnelgate/tunnelgate/test/kubelet"
	"github.com/tunnelgate/tunnelgate/test/testnet"
)

// orderImage notes what happens to it in the file $EVENTS, a line each:
// "$NAME start", "$NAME listening" once it listens on $PORT (after
// $DELAY), "$NAME term" on SIGTERM and "$NAME exit" $STOP_DELAY later.
const orderImage = "tunnelgate.test/order"

func orderMain([]string) int {
	name := os.Getenv("NAME")
	note := func(what string) {
		f, err := os.OpenFile(os.Getenv("EVENTS"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%s %s\n", name, what)
			f.Close()
		}
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	note("start")
	delay, _ := time.ParseDuration(os.Getenv("DELAY"))
	time.Sleep(delay)
	ln, err := net.Listen("tcp", ":"+os.Getenv("PORT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ln.Close()
	go testnet.Accept(ln, func(net.Conn) {}) // accepted is all a TCP probe asks
	note("listening")
	<-term
	note("term")
	stop, _ := time.ParseDuration(os.Getenv("STOP_DELAY"))
	time.Sleep(stop)
	note("exit")
	return 0
}

// A native sidecar (an init container with restartPolicy Always) starts
// before the Pod's container, which waits for the sidecar's startup
// probe; on delete the container stops first and the sidecar after it,
// as the kubelet orders them. The sidecar is reported among the init
// containers.
func TestNativeSidecarOrder(t *testing.T) {
	dir := t.TempDir()
	env, kube := startWith(t, kubelet.Options{Dir: dir})
	ctx := t.Context()
	ns := env.Namespace(t)
	if err := env.Apply(ctx, fmt.Appendf(nil, `
apiVersion: v1
kind: Pod
metadata: {name: order, namespace: %[1]s}
spec:
  terminationGracePeriodSeconds: 5
  volumes: [{name: shared, emptyDir: {}}]
  initContainers:
  - name: side
    image: %[2]s
    restartPolicy: Always
    env: [{name: NAME, value: side}, {name: EVENTS, value: /shared/events}, {name: PORT, value: "9000"},
          {name: DELAY, value: 700ms}, {name: STOP_DELAY, value: 300ms}]
    startupProbe: {tcpSocket: {port: 9000}, periodSeconds: 1}
    volumeMounts: [{name: shared, mountPath: /shared}]
  containers:
  - name: main
    image: %[2]s
    env: [{name: NAME, value: main}, {name: EVENTS, value: /shared/events}, {name: PORT, value: "9001"},
          {name: STOP_DELAY, value: 300ms}]
    ports: [{containerPort: 9001}]
    volumeMounts: [{name: shared, mountPath: /shared}]
`, ns, orderImage)); err != nil {
		t.Fatal(err)
	}
	events := func() []string {
		files, _ := filepath.Glob(filepath.Join(dir, ns+"_order_*", "volumes", "shared", "events"))
		if len(files) != 1 {
			return nil
		}
		b, _ := os.ReadFile(files[0])
		return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), " ", "_"))
	}
	eventually(t, "the pod ready, its sidecar among the init containers", func() (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "order", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || c.Type == "Ready" && c.Status == "True"
		}
		ok := ready && len(p.Status.InitContainerStatuses) == 1 && p.Status.InitContainerStatuses[0].Name == "side" &&
			len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Name == "main"
		return ok, fmt.Sprintf("%+v", p.Status)
	})
	if got, want := events(), []string{"side_start", "side_listening", "main_start", "main_listening"}; !slices.Equal(got, want) {
		t.Errorf("start: %v; want %v (the container after the sidecar's startup probe)", got, want)
	}

	if err := kube.CoreV1().Pods(ns).Delete(ctx, "order", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod gone", func() (bool, string) {
		_, err := kube.CoreV1().Pods(ns).Get(ctx, "order", metav1.GetOptions{})
		return err != nil, "still there"
	})
	want := []string{"side_start", "side_listening", "main_start", "main_listening", "main_term", "main_exit", "side_term", "side_exit"}
	if got := events(); !slices.Equal(got, want) {
		t.Errorf("stop: %v; want %v (the sidecar stopped after the container)", got, want)
	}
}
