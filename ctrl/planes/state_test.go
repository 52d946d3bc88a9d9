package planes

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What the cluster says of a plane's proxies becomes its State: ready
// counts, and the first problem a user must act on.
func TestStateOf(t *testing.T) {
	two := int32(2)
	deploy := func(ready int32, conds ...appsv1.DeploymentCondition) *appsv1.Deployment {
		return &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &two},
			Status: appsv1.DeploymentStatus{ReadyReplicas: ready, Conditions: conds}}
	}
	waiting := func(name, reason string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "proxy", State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "details"}}}}}}
	}
	unschedulable := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes have enough cpu"}}}}
	for _, tc := range []struct {
		name        string
		d           *appsv1.Deployment
		pods        []*corev1.Pod
		ready       int32
		problem     string
		noResources bool
	}{
		{"all ready", deploy(2), nil, 2, "", false},
		{"starting", deploy(0), []*corev1.Pod{waiting("a", "ContainerCreating")}, 0, "", false},
		{"a quota", deploy(0, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
			Reason: "FailedCreate", Message: "exceeded quota"}), nil, 0, "FailedCreate: exceeded quota", true},
		{"past the deadline", deploy(1, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
			Reason: "ProgressDeadlineExceeded", Message: "too slow"}), nil, 1, "ProgressDeadlineExceeded", false},
		{"an image", deploy(0), []*corev1.Pod{waiting("b", "ImagePullBackOff"), waiting("a", "ContainerCreating")}, 0, "Pod b container proxy: ImagePullBackOff", false},
		{"crashing, first by name", deploy(1), []*corev1.Pod{waiting("z", "ErrImagePull"), waiting("c", "CrashLoopBackOff")}, 1, "Pod c container proxy: CrashLoopBackOff", false},
		{"no node", deploy(0), []*corev1.Pod{unschedulable}, 0, "cannot be scheduled: 0/3 nodes", true},
	} {
		st := stateOf(tc.d, tc.pods)
		if st.Replicas != 2 || st.Ready != tc.ready || st.NoResources != tc.noResources ||
			(tc.problem == "") != (st.Problem == "") || !strings.Contains(st.Problem, tc.problem) {
			t.Errorf("%s: %+v; want ready %d, problem %q, noResources %v", tc.name, st, tc.ready, tc.problem, tc.noResources)
		}
	}
}
