package kubelet_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// talkImage prints "one" and "two" on stdout and "oops" on stderr, then
// prints the query's x of every request to :8080/say.
const talkImage = "tunnelgate.test/talk"

func talkMain([]string) int {
	fmt.Println("one")
	fmt.Println("two")
	fmt.Fprintln(os.Stderr, "oops")
	ln, err := net.Listen("tcp", ":8080")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	err = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println(r.URL.Query().Get("x"))
	}))
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// Logs reach a client through the API server (pods/log), as kubectl logs
// and the conformance suite's mirror tests read them, with sinceTime,
// tailLines and timestamps.
func TestPodLogs(t *testing.T) {
	env, kube := start(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	if err := env.Apply(ctx, fmt.Appendf(nil, `
apiVersion: v1
kind: Pod
metadata: {name: talk, namespace: %s}
spec:
  containers: [{name: talker, image: %s, ports: [{containerPort: 8080}]}]
`, ns, talkImage)); err != nil {
		t.Fatal(err)
	}
	var ip string
	eventually(t, "the Pod Ready", func() (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "talk", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ip = p.Status.PodIP
		return podReady(p), fmt.Sprintf("%+v", p.Status)
	})
	// sinceTime has whole seconds: start a new one.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
	since := metav1.NewTime(time.Now().Truncate(time.Second))
	res, err := http.Get("http://" + net.JoinHostPort(ip, "8080") + "/say?x=three")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()

	for _, c := range []struct {
		name string
		opts corev1.PodLogOptions
		want string
	}{
		// stdout and stderr are read apart, so "oops" may come anywhere
		// before "three": compared sorted.
		{"all", corev1.PodLogOptions{}, "one\noops\nthree\ntwo"},
		{"since", corev1.PodLogOptions{Container: "talker", SinceTime: &since}, "three"},
		{"tail", corev1.PodLogOptions{TailLines: new(int64(1))}, "three"},
	} {
		eventually(t, "logs "+c.name, func() (bool, string) {
			lines := strings.Split(strings.TrimSuffix(logs(t, kube, ns, "talk", &c.opts), "\n"), "\n")
			slices.Sort(lines)
			got := strings.Join(lines, "\n")
			return got == c.want, fmt.Sprintf("%q, want %q", got, c.want)
		})
	}
	got := logs(t, kube, ns, "talk", &corev1.PodLogOptions{Timestamps: true, TailLines: new(int64(1))})
	ts, text, _ := strings.Cut(strings.TrimSpace(got), " ")
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || text != "three" {
		t.Errorf("with timestamps: %q", got)
	}
	req := kube.CoreV1().Pods(ns).GetLogs("talk", &corev1.PodLogOptions{Container: "nobody"})
	if _, err := req.DoRaw(ctx); err == nil {
		t.Error("logs of a container the Pod does not have: no error")
	}
}

func logs(t *testing.T, kube kubernetes.Interface, ns, pod string, opts *corev1.PodLogOptions) string {
	t.Helper()
	s, err := kube.CoreV1().Pods(ns).GetLogs(pod, opts).Stream(t.Context())
	if err != nil {
		return "error: " + err.Error()
	}
	defer s.Close()
	b, _ := io.ReadAll(s)
	return string(b)
}
