// This file tests that a rotation of a plane's tunnel credential rolls
// its Pods.

package provision

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

// The time of the last rotation is on the Pod template, beside what else
// is there, so a new one rolls the Pods; none, and nothing is added.
func TestRotationRollsThePods(t *testing.T) {
	p := readPlane(t, "testdata/full.yaml")
	template := func(p Plane) map[string]string {
		objs, err := Objects(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if d, ok := o.(*appsv1.Deployment); ok {
				return d.Spec.Template.Annotations
			}
		}
		t.Fatal("no Deployment rendered")
		return nil
	}
	before := template(p)
	if _, ok := before[v1alpha1.AnnotationRotatedAt]; ok {
		t.Fatalf("a plane never rotated has the stamp: %v", before)
	}
	p.TunnelRotatedAt = "2026-03-01T12:00:00Z"
	after := template(p)
	if after[v1alpha1.AnnotationRotatedAt] != p.TunnelRotatedAt || len(after) != len(before)+1 {
		t.Errorf("Pod template annotations %v after a rotation, %v before: want the stamp added", after, before)
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("annotation %s: %q after the rotation, %q before", k, after[k], v)
		}
	}
}
