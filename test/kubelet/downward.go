package kubelet

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The downward API, in env and in projected volumes: the Pod's fields
// (fieldRef: metadata.name, metadata.namespace, metadata.uid,
// spec.nodeName, spec.serviceAccountName, status.podIP(s),
// status.hostIP(s)) and a container's resources (resourceFieldRef:
// limits.* and requests.* of cpu, memory and ephemeral-storage), as the
// kubelet computes them: the value divided by the divisor (default 1) and
// rounded up, cpu in millicores before dividing, so 250m is 1 with the
// default divisor and 250 with 1m; a limit the container does not set is
// the Node's allocatable (nodeCapacity), a request it does not set 0.
// Labels and annotations are not supported.

// envValue resolves a literal or a downward-API value for container c.
func (p *pod) envValue(c corev1.Container, e corev1.EnvVar) (string, error) {
	if e.ValueFrom == nil {
		return e.Value, nil
	}
	if f := e.ValueFrom.FieldRef; f != nil {
		if v, ok := p.fieldValue(f.FieldPath); ok {
			return v, nil
		}
	}
	if f := e.ValueFrom.ResourceFieldRef; f != nil {
		v, err := p.resourceValue(c, f)
		if err != nil {
			return "", &errConfig{"CreateContainerConfigError", fmt.Sprintf("env %s: %v", e.Name, err)}
		}
		return v, nil
	}
	return "", &errConfig{"CreateContainerConfigError", fmt.Sprintf("env %s: only literal values and the downward API's fieldRef (pod fields) and resourceFieldRef are supported", e.Name)}
}

// fieldValue is a fieldRef's value.
func (p *pod) fieldValue(path string) (string, bool) {
	switch path {
	case "metadata.name":
		return p.name, true
	case "metadata.namespace":
		return p.namespace, true
	case "metadata.uid":
		return string(p.uid), true
	case "spec.nodeName":
		return p.k.opts.NodeName, true
	case "spec.serviceAccountName":
		return p.spec.ServiceAccountName, true
	case "status.podIP", "status.podIPs":
		return p.sandbox.addr.String(), true
	case "status.hostIP", "status.hostIPs":
		return p.k.net.gateway.String(), true
	}
	return "", false
}

// resourceValue is a resourceFieldRef's value: of the container it names,
// or else of c.
func (p *pod) resourceValue(c corev1.Container, f *corev1.ResourceFieldSelector) (string, error) {
	if f.ContainerName != "" && f.ContainerName != c.Name {
		found := false
		for _, o := range append(p.spec.InitContainers, p.spec.Containers...) {
			if o.Name == f.ContainerName {
				c, found = o, true
				break
			}
		}
		if !found {
			return "", fmt.Errorf("resourceFieldRef: no container %q", f.ContainerName)
		}
	}
	return containerResource(f, c.Resources, nodeCapacity())
}

// containerResource computes a resourceFieldRef as the kubelet does
// (k8s.io/kubernetes/pkg/api/v1/resource.ExtractContainerResourceValue,
// after defaulting the limits to the Node's allocatable).
func containerResource(f *corev1.ResourceFieldSelector, res corev1.ResourceRequirements, allocatable corev1.ResourceList) (string, error) {
	divisor := f.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, _ := strings.Cut(f.Resource, ".")
	rn := corev1.ResourceName(name)
	switch rn {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
	default:
		return "", fmt.Errorf("resourceFieldRef %q: only limits and requests of cpu, memory and ephemeral-storage are supported", f.Resource)
	}
	var q resource.Quantity
	switch kind {
	case "limits":
		var ok bool
		if q, ok = res.Limits[rn]; !ok {
			q = allocatable[rn]
		}
	case "requests":
		q = res.Requests[rn]
	default:
		return "", fmt.Errorf("resourceFieldRef %q: want limits.<resource> or requests.<resource>", f.Resource)
	}
	var v float64
	if rn == corev1.ResourceCPU {
		v = float64(q.MilliValue()) / float64(divisor.MilliValue())
	} else {
		v = float64(q.Value()) / float64(divisor.Value())
	}
	return strconv.FormatInt(int64(math.Ceil(v)), 10), nil
}
