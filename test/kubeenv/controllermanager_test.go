package kubeenv

import (
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestControllerManager starts an Env of its own with the controller
// manager: a Deployment gets a ReplicaSet and the ReplicaSet a Pod, which
// stays Pending as there is no kubelet. It also checks that Stop leaves
// nothing behind.
func TestControllerManager(t *testing.T) {
	e := StartT(t, Options{ControllerManager: true, NoCRDs: true})
	ctx := t.Context()
	err := e.Apply(ctx, []byte(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: example.invalid/web}]
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "apps", Version: "v1", Resource: "replicasets"},
		{Version: "v1", Resource: "pods"},
	} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			l, err := e.Dynamic().Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Items) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s for the Deployment after 30s", gvr.Resource)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	e.Stop()
	for _, p := range e.procs {
		select {
		case <-p.done:
		default:
			t.Errorf("%s still running after Stop", p.name)
		}
	}
	if _, err := os.Stat(e.Dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after Stop: %v", e.Dir, err)
	}
}
