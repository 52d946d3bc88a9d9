package provision

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// Every port a plane's Pods listen on (a container port, or one in a
// listening flag of the proxy or cloudflared) is one that the spec's
// PortHolder (api/v1alpha1) names for that plane, so translate refuses it to the Gateway's listeners when the
// plane serves them on their own ports. Checked over every golden case,
// so a new port in the Pods cannot be forgotten there.
func TestPortHolderNamesEveryPodPort(t *testing.T) {
	cases, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range cases {
		if strings.HasSuffix(in, ".out.yaml") {
			continue
		}
		p := readPlane(t, in)
		d := deployment(p)
		for port, where := range podPorts(t, d) {
			if p.Params.PortHolder(port) == "" {
				t.Errorf("%s: the Pods listen on %d (%s), which PortHolder does not name", in, port, where)
			}
		}
		// And nothing else: a listener may have any other port.
		for _, port := range []int32{80, 443, 8080, 8081, 9090} {
			if h := p.Params.PortHolder(port); h != "" {
				t.Errorf("%s: PortHolder names %d (%s), which the Pods do not use", in, port, h)
			}
		}
	}
}

// podPorts are the ports the Pods of d listen on, each with where it was
// found.
func podPorts(t *testing.T, d *appsv1.Deployment) map[int32]string {
	t.Helper()
	ports := map[int32]string{}
	spec := d.Spec.Template.Spec
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		for _, cp := range c.Ports {
			ports[cp.ContainerPort] = c.Name + " port " + cp.Name
		}
		for _, a := range c.Args {
			name, value, ok := strings.Cut(a, "=")
			if !ok || !strings.Contains(name, "listen") && !strings.Contains(name, "admin") && !strings.Contains(name, "metrics") {
				continue
			}
			i := strings.LastIndexByte(value, ':')
			if i < 0 || strings.HasPrefix(value, "unix:") {
				continue
			}
			n, err := strconv.ParseInt(value[i+1:], 10, 32)
			if err != nil {
				t.Fatalf("%s: %s: no port in %q", c.Name, name, value)
			}
			ports[int32(n)] = c.Name + " " + a
		}
	}
	return ports
}
