package kubelet

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cluster DNS, through /etc/hosts. There is no DNS server: each container
// runs in a mount namespace of its own, with a hosts file the Kubelet
// writes (<pod dir>/<container>.hosts) bind-mounted over /etc/hosts. It
// holds
//
//	127.0.0.1   localhost
//	::1         localhost
//	<pod IP>    <pod name>
//	<ClusterIP> <svc>.<ns>.svc.cluster.local <svc>.<ns>.svc <svc>.<ns> [<svc>]
//	<ip>        <the hostnames of each of spec.hostAliases>
//
// with a line for every Service that has a ClusterIP when the container
// starts, the short name only for Services of the Pod's namespace. A
// Service created later is not in it: restart the container (or create
// the Service first). Names resolve only through /etc/hosts: there is no
// resolv.conf search path, so `web` or `web.ns.svc` resolve because they
// are listed, and nothing else does.
//
// The container's process is started as
//
//	unshare --mount --propagation private \
//	    sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' <hosts file> <program> <args>...
//
// unshare and sh exec, so the PID the Kubelet signals and waits for
// becomes the program's own and its exit code is the container's; the
// bind mount stays in the container's namespace. Needs util-linux.

// hostsTools are the absolute paths of what wraps a container's command,
// found once at Start, so a container's own PATH cannot change them.
type hostsTools struct{ unshare, sh, mount string }

func findHostsTools() (hostsTools, error) {
	var t hostsTools
	for _, f := range []struct {
		name string
		path *string
	}{{"unshare", &t.unshare}, {"sh", &t.sh}, {"mount", &t.mount}} {
		p, err := exec.LookPath(f.name)
		if err != nil {
			return t, fmt.Errorf("kubelet: %s(1) is needed to give each container its /etc/hosts (install util-linux): %w", f.name, err)
		}
		*f.path = p
	}
	return t, nil
}

// withHosts wraps exe and args so that they run with hosts over
// /etc/hosts.
func (t hostsTools) withHosts(hosts, exe string, args []string) *exec.Cmd {
	script := shellQuote(t.mount) + ` --bind "$0" /etc/hosts && exec "$@"`
	return exec.Command(t.unshare, append([]string{
		"--mount", "--propagation", "private", t.sh, "-c", script, hosts, exe,
	}, args...)...)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeHosts writes c's hosts file, from the Services there are now, and
// returns its path.
func (p *pod) writeHosts(c corev1.Container) (string, error) {
	var b strings.Builder
	b.WriteString("# Written by test/kubelet for this container: the Services that existed when it started.\n")
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost\n")
	fmt.Fprintf(&b, "%s\t%s\n", p.sandbox.addr, p.name)
	svcs, err := p.services()
	if err != nil {
		return "", err
	}
	slices.SortFunc(svcs, func(a, b *corev1.Service) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, s := range svcs {
		addr, ok := clusterIP(s)
		if !ok {
			continue
		}
		n := s.Name + "." + s.Namespace
		fmt.Fprintf(&b, "%s\t%s.svc.cluster.local %s.svc %s", addr, n, n, n)
		if s.Namespace == p.namespace {
			b.WriteString(" " + s.Name)
		}
		b.WriteString("\n")
	}
	for _, a := range p.spec.HostAliases {
		if len(a.Hostnames) > 0 {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, " "))
		}
	}
	path := filepath.Join(p.dir, c.Name+".hosts")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// services are the Services there are now. They are read from the API
// server, not the informer, whose watch may not have delivered yet a
// Service created just before the Pod (as one manifest creates both).
func (p *pod) services() ([]*corev1.Service, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := p.k.kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the Services for the hosts file: %w", err)
	}
	out := make([]*corev1.Service, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}
