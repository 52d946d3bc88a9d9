package chart

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// container runs one tunnelgate container of a pod template read from the
// API server, the way a kubelet would, on this machine. What a node gives
// a pod is stood in for, and nothing else is changed:
//
//   - Volumes: each Secret volume's items (every key, without items) are
//     written, with their modes, to a directory, and an argument that
//     names a mount path or a file under one (a unix socket's too) is
//     pointed into that directory. Like a kubelet, it waits for a Secret
//     that does not exist yet. emptyDirs are empty directories.
//   - The pod network: listen addresses are moved to free loopback ports
//     (listen), and cluster DNS names resolve through an /etc/hosts bind-
//     mounted in a mount namespace of the container's own (hosts).
//   - The downward API: POD_NAME, POD_NAMESPACE and limits.memory.
//   - The security context: the process runs as the pod's runAsUser and
//     runAsGroup, with fsGroup, which owns the volumes' files as a kubelet
//     makes it; so a file mode the user cannot read, or a write outside the
//     volumes, fails here as it would in the pod.
//
// extra arguments are appended (a controller outside a cluster needs
// -kubeconfig). It returns the directory each mount path landed in.
type container struct {
	kube      kubernetes.Interface
	namespace string
	pod       string
	spec      corev1.PodSpec
	c         corev1.Container
	listen    map[string]string // flag -> new address
	rewrite   map[string]string // flag -> new value
	hosts     string            // /etc/hosts lines; empty: the machine's
	extra     []string
	root      string // a directory every user may enter, for the volumes
}

// start runs the container until the test ends and returns where its
// volumes are. entrypoint is its image's, whose directory holds the
// image's files: a container with a command runs the file it names
// there, as on a node.
func (k container) start(t *testing.T, entrypoint string) map[string]string {
	t.Helper()
	mounts := k.volumes(t)
	binary, command := entrypoint, []string(nil)
	if len(k.c.Command) > 0 {
		binary, command = filepath.Join(filepath.Dir(entrypoint), filepath.FromSlash(k.c.Command[0])), k.c.Command[1:]
	}
	args := slices.Concat(command, k.c.Args)
	for i, a := range args {
		flag, value, ok := strings.Cut(a, "=")
		if !ok {
			continue
		}
		if v, ok := k.listen[flag]; ok {
			value = v
		}
		if v, ok := k.rewrite[flag]; ok {
			value = v
		}
		args[i] = flag + "=" + hostPath(mounts, value)
	}
	args = append(args, k.extra...)

	env := os.Environ()
	for _, e := range k.c.Env {
		v, err := k.envValue(e)
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, e.Name+"="+v)
	}
	uid, gid, fsGroup := k.user()
	name, cmdArgs := binary, args
	if k.hosts != "" {
		// Mount as root, then become the pod's user for the exec.
		hosts := filepath.Join(k.root, k.pod+"-"+k.c.Name+"-hosts")
		if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"+k.hosts), 0o644); err != nil {
			t.Fatal(err)
		}
		name = "unshare"
		cmdArgs = append([]string{"--mount", "--propagation", "private", "sh", "-c",
			`mount --bind "$0" /etc/hosts && u=$1 g=$2 f=$3 && shift 3 && exec setpriv --reuid="$u" --regid="$g" --groups="$f" --inh-caps=-all -- "$@"`,
			hosts, strconv.Itoa(uid), strconv.Itoa(gid), strconv.Itoa(fsGroup), binary}, args...)
	}
	log := &bytes.Buffer{}
	cmd := exec.Command(name, cmdArgs...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
	cmd.SysProcAttr = testproc.SysProcAttr()
	if k.hosts == "" {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{uint32(fsGroup)}}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("%s/%s log:\n%s", k.pod, k.c.Name, tail(log.String(), 60))
		}
	})
	return mounts
}

// volumes materialises the container's volume mounts.
func (k container) volumes(t *testing.T) map[string]string {
	t.Helper()
	mounts := map[string]string{}
	for _, m := range k.c.VolumeMounts {
		var vol *corev1.Volume
		for i := range k.spec.Volumes {
			if k.spec.Volumes[i].Name == m.Name {
				vol = &k.spec.Volumes[i]
			}
		}
		if vol == nil {
			t.Fatalf("%s: mount %s names no volume", k.c.Name, m.Name)
		}
		dir, err := os.MkdirTemp(k.root, k.c.Name+"-"+m.Name+"-")
		if err != nil {
			t.Fatal(err)
		}
		_, _, fsGroup := k.user()
		switch {
		case vol.EmptyDir != nil:
			// Writable by the fsGroup, new files inheriting it.
			if err := os.Chown(dir, 0, fsGroup); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o2775); err != nil {
				t.Fatal(err)
			}
		case vol.Secret != nil:
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			k.writeSecret(t, dir, vol.Secret, fsGroup)
		case vol.ConfigMap != nil:
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			k.writeConfigMap(t, dir, vol.ConfigMap)
		default:
			t.Fatalf("%s: volume %s is of a kind this test does not run", k.c.Name, vol.Name)
		}
		mounts[m.MountPath] = dir
	}
	return mounts
}

// writeConfigMap writes every key of a ConfigMap the chart renders (it
// exists before the Pods), readable by all, as a kubelet does by default.
func (k container) writeConfigMap(t *testing.T, dir string, src *corev1.ConfigMapVolumeSource) {
	t.Helper()
	cm, err := k.kube.CoreV1().ConfigMaps(k.namespace).Get(context.Background(), src.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: ConfigMap %s for the pod: %v", k.c.Name, src.Name, err)
	}
	if len(src.Items) > 0 {
		t.Fatalf("%s: ConfigMap volume %s names items, which this test does not run", k.c.Name, src.Name)
	}
	for key, data := range cm.Data {
		if err := os.WriteFile(filepath.Join(dir, key), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeSecret waits for the Secret, as a kubelet does, and writes its
// items, or every key when the volume names none.
func (k container) writeSecret(t *testing.T, dir string, src *corev1.SecretVolumeSource, fsGroup int) {
	t.Helper()
	var s *corev1.Secret
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		s, err = k.kube.CoreV1().Secrets(k.namespace).Get(context.Background(), src.SecretName, metav1.GetOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			t.Fatalf("%s: Secret %s for the pod: %v", k.c.Name, src.SecretName, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	mode := os.FileMode(0o644)
	if src.DefaultMode != nil {
		mode = os.FileMode(*src.DefaultMode)
	}
	items := src.Items
	if len(items) == 0 {
		for key := range s.Data {
			items = append(items, corev1.KeyToPath{Key: key, Path: key})
		}
	}
	for _, it := range items {
		data, ok := s.Data[it.Key]
		if !ok {
			t.Fatalf("%s: Secret %s has no key %s", k.c.Name, src.SecretName, it.Key)
		}
		file := filepath.Join(dir, it.Path)
		if err := os.WriteFile(file, data, mode); err != nil {
			t.Fatal(err)
		}
		// The kubelet gives volume files to root and the fsGroup, with
		// exactly defaultMode.
		if err := os.Chown(file, 0, fsGroup); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(file, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// user returns the uid, gid and fsGroup the container runs with, from the
// pod's and the container's security contexts; the test fails if the pod
// would run as root.
func (k container) user() (uid, gid, fsGroup int) {
	uid, gid, fsGroup = -1, -1, -1
	if p := k.spec.SecurityContext; p != nil {
		if p.RunAsUser != nil {
			uid = int(*p.RunAsUser)
		}
		if p.RunAsGroup != nil {
			gid = int(*p.RunAsGroup)
		}
		if p.FSGroup != nil {
			fsGroup = int(*p.FSGroup)
		}
	}
	if c := k.c.SecurityContext; c != nil {
		if c.RunAsUser != nil {
			uid = int(*c.RunAsUser)
		}
		if c.RunAsGroup != nil {
			gid = int(*c.RunAsGroup)
		}
	}
	if uid <= 0 || gid < 0 || fsGroup < 0 {
		panic(fmt.Sprintf("%s/%s: no non-root runAsUser, runAsGroup and fsGroup", k.pod, k.c.Name))
	}
	return uid, gid, fsGroup
}

// envValue resolves the downward API fields the chart uses.
func (k container) envValue(e corev1.EnvVar) (string, error) {
	switch {
	case e.ValueFrom == nil:
		return e.Value, nil
	case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
		return k.pod, nil
	case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
		return k.namespace, nil
	case e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
		return strconv.FormatInt(k.c.Resources.Limits.Memory().Value(), 10), nil
	}
	return "", fmt.Errorf("%s: env %s comes from a source this test does not run", k.c.Name, e.Name)
}

// hostPath points a path under a mount path into the mount's directory.
func hostPath(mounts map[string]string, p string) string {
	if rest, ok := strings.CutPrefix(p, "unix:"); ok {
		return "unix:" + hostPath(mounts, rest)
	}
	for mountPath, dir := range mounts {
		if p == mountPath {
			return dir
		}
		if rest, ok := strings.CutPrefix(p, mountPath+"/"); ok {
			return filepath.Join(dir, rest)
		}
	}
	return p
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
