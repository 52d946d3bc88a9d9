// This file reads what a plane's Deployment and Pods say, for the
// Gateway's status.

package planes

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tunnelgate/tunnelgate/ctrl/provision"
)

// State is what a plane's Deployment and Pods say of its proxies.
type State struct {
	// Replicas is how many proxies the Deployment wants, Ready how many
	// of them are ready (their proxy holds a config, their cloudflared is
	// connected).
	Replicas, Ready int32
	// Problem is why proxies are missing, when the cluster says: a quota
	// or a missing node refusing Pods (NoResources), an image that cannot
	// be pulled, a container that keeps crashing, a rollout past its
	// deadline; "" otherwise.
	Problem     string
	NoResources bool
	// ServiceIP is the ClusterIP of the plane's Service, once it has one.
	ServiceIP string
	// PodIPs are the addresses of its ready Pods that are not being
	// deleted, sorted: where the shared proxies relay to a plane that
	// takes its requests through them.
	PodIPs []string
	// Relay are the relay's credentials, once its credentials Secret
	// holds them (provision.RelayCredentialsOf).
	Relay *provision.RelayCredentials
}

// waitingProblems are the reasons a container waits for that a user must
// act on; others (ContainerCreating, PodInitializing) pass by themselves.
var waitingProblems = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CrashLoopBackOff",
	"CreateContainerConfigError", "CreateContainerError", "RunContainerError"}

// State reads a Gateway's plane from the informers' cache; ok is false
// while it has no Deployment and nothing failed. A failed apply (a quota,
// an admission webhook) is the State's Problem.
func (p *Provisioner) State(gateway types.NamespacedName, class string) (st State, ok bool) {
	p.mu.Lock()
	failed := p.failed[gateway]
	p.mu.Unlock()
	name := provision.Name(gateway.Name, class)
	if d := p.owned.deployment(gateway.Namespace, name); d != nil {
		st, ok = stateOf(d, p.owned.podsOf(d)), true
	}
	if svc := p.owned.service(gateway.Namespace, name); ok && svc != nil && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		st.ServiceIP = svc.Spec.ClusterIP
	}
	if ok {
		secret := p.owned.secret(gateway.Namespace, provision.CredentialsName(gateway.Name, class))
		if c, has := provision.RelayCredentialsOf(secret); has {
			st.Relay = &c
		}
	}
	if failed != "" {
		st.Problem = "applying the plane: " + failed
		st.NoResources = strings.Contains(failed, "exceeded quota")
		ok = true
	}
	return st, ok
}

func stateOf(d *appsv1.Deployment, pods []*corev1.Pod) State {
	st := State{Ready: d.Status.ReadyReplicas, Replicas: 1, PodIPs: readyIPs(pods)}
	if d.Spec.Replicas != nil {
		st.Replicas = *d.Spec.Replicas
	}
	for _, c := range d.Status.Conditions {
		switch {
		case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue:
			// The ReplicaSet could not make Pods: a quota, a policy.
			st.Problem, st.NoResources = fmt.Sprintf("%s: %s", c.Reason, c.Message), true
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && st.Problem == "":
			st.Problem = fmt.Sprintf("%s: %s", c.Reason, c.Message)
		}
	}
	if st.Problem == "" {
		st.Problem, st.NoResources = podsProblem(pods)
	}
	return st
}

// podsProblem is the first thing a Pod of the plane waits for that a user
// must act on, in Pod name order so the report is stable.
func podsProblem(pods []*corev1.Pod) (string, bool) {
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return fmt.Sprintf("Pod %s cannot be scheduled: %s", p.Name, c.Message), true
			}
		}
		for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
			if w := cs.State.Waiting; w != nil && slices.Contains(waitingProblems, w.Reason) {
				return fmt.Sprintf("Pod %s container %s: %s: %s", p.Name, cs.Name, w.Reason, w.Message), false
			}
		}
	}
	return "", false
}

// readyIPs are the addresses of the Pods that are Ready and not being
// deleted (a Pod draining still answers, but takes nothing new), sorted.
func readyIPs(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				out = append(out, p.Status.PodIP)
			}
		}
	}
	slices.Sort(out)
	return out
}
