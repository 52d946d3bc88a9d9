package kubelet_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// filesImage serves the files its env and args name: GET /env/NAME answers
// "<mode> <contents>" of the file at $NAME, GET /arg/N that of args[N]
// (the part after "=" of a -flag=path).
const filesImage = "tunnelgate.test/files"

func filesMain(args []string) int {
	read := func(path string) string {
		fi, err := os.Stat(path)
		if err != nil {
			return err.Error()
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%04o %s", fi.Mode().Perm(), b)
	}
	ln, err := net.Listen("tcp", ":8080")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	err = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name, ok := strings.CutPrefix(r.URL.Path, "/env/"); ok {
			io.WriteString(w, read(os.Getenv(name)))
			return
		}
		if n, ok := strings.CutPrefix(r.URL.Path, "/arg/"); ok {
			i, _ := strconv.Atoi(n)
			if i < len(args) {
				a := args[i]
				if _, v, ok := strings.Cut(a, "="); ok {
					a = v
				}
				io.WriteString(w, read(a))
				return
			}
		}
		http.NotFound(w, r)
	}))
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// A Pod waits for the Secret its volume names, as ContainerCreating with
// the reason, and starts when it appears; its program finds the Secret's
// and the ConfigMap's files, with their modes, at the paths its env and
// arguments give under the mount paths.
func TestVolumes(t *testing.T) {
	env, kube := start(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	err := env.Apply(ctx, fmt.Appendf(nil, `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: %[1]s}
data: {greeting: hello, other: x}
---
apiVersion: v1
kind: Pod
metadata: {name: files, namespace: %[1]s}
spec:
  containers:
  - name: c
    image: %[2]s
    ports: [{containerPort: 8080}] # Ready once it answers there
    args: ["-greeting=/etc/cfg/greeting", "/etc/secret-volume/crt"]
    env:
    - {name: CERT, value: /etc/secret-volume/crt}
    - {name: OTHER, value: /etc/cfg/other}
    - {name: SCRATCH, value: /scratch/none}
    volumeMounts:
    - {name: secret-volume, mountPath: /etc/secret-volume}
    - {name: cfg, mountPath: /etc/cfg}
    - {name: scratch, mountPath: /scratch}
  volumes:
  - name: secret-volume
    secret:
      secretName: creds
      defaultMode: 0400
      items: [{key: tls.crt, path: crt}]
  - name: cfg
    configMap: {name: cfg}
  - name: scratch
    emptyDir: {}
`, ns, filesImage))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Pod waiting for its Secret", func() (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "files", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) != 1 {
			return false, fmt.Sprintf("%v %+v", err, p.Status)
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ContainerCreating" && strings.Contains(w.Message, `secret "creds" not found`), fmt.Sprintf("%+v", p.Status.ContainerStatuses[0].State)
	})
	if err := env.Apply(ctx, fmt.Appendf(nil, `
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: %s}
stringData: {tls.crt: CERTIFICATE, tls.key: KEY}
`, ns)); err != nil {
		t.Fatal(err)
	}
	var ip string
	eventually(t, "the Pod Ready once the Secret exists", func() (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "files", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ip = p.Status.PodIP
		return podReady(p), fmt.Sprintf("%+v", p.Status)
	})
	for path, want := range map[string]string{
		"/env/CERT":    "0400 CERTIFICATE",
		"/env/OTHER":   "0644 x",
		"/arg/0":       "0644 hello",
		"/arg/1":       "0400 CERTIFICATE",
		"/env/SCRATCH": "", // checked below: inside the emptyDir, not /scratch
	} {
		res, err := http.Get("http://" + net.JoinHostPort(ip, "8080") + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		got := string(b)
		if path == "/env/SCRATCH" {
			if !strings.Contains(got, "/volumes/") || !strings.Contains(got, "/scratch/none") || strings.Contains(got, " /scratch/none") || !strings.Contains(got, "no such file") {
				t.Errorf("%s: %q; want a missing file inside the emptyDir's directory", path, got)
			}
			continue
		}
		if got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
