package kubelet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// resourceFieldRef values as the kubelet computes them.
func TestContainerResource(t *testing.T) {
	res := corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100M"), corev1.ResourceCPU: resource.MustParse("1500m")},
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Mi"), corev1.ResourceCPU: resource.MustParse("1m")},
	}
	for _, c := range []struct {
		resource, divisor, want string
	}{
		{"limits.memory", "", "100000000"},
		{"limits.memory", "1Mi", "96"}, // 95.37 rounded up
		{"limits.cpu", "", "2"},        // 1.5 rounded up
		{"limits.cpu", "1m", "1500"},
		{"requests.cpu", "", "1"},
		{"requests.memory", "1Ki", "1024"},
		{"limits.ephemeral-storage", "1Gi", "100"}, // not set: the Node's allocatable
		{"requests.ephemeral-storage", "", "0"},    // not set: nothing
	} {
		f := &corev1.ResourceFieldSelector{Resource: c.resource}
		if c.divisor != "" {
			f.Divisor = resource.MustParse(c.divisor)
		}
		got, err := containerResource(f, res, nodeCapacity())
		if err != nil || got != c.want {
			t.Errorf("%s / %q = %q, %v; want %q", c.resource, c.divisor, got, err, c.want)
		}
	}
	if _, err := containerResource(&corev1.ResourceFieldSelector{Resource: "limits.nvidia.com/gpu"}, res, nodeCapacity()); err == nil {
		t.Error("an unsupported resource gave no error")
	}
}
