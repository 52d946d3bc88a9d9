package planes

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tunnelgate/tunnelgate/ctrl/provision"
)

// State is what a plane's Deployment says of its proxies.
type State struct {
	// Replicas is how many proxies the Deployment wants, Ready how many
	// of them are ready (their proxy holds a config, their cloudflared is
	// connected).
	Replicas, Ready int32
	// Problem is why proxies are missing, from the Deployment's
	// conditions (a quota refusing Pods, a rollout past its deadline), or
	// "" when there is no Deployment yet, or none is missing.
	Problem string
}

// State reads a Gateway's plane from the informers' cache; ok is false
// while it has no Deployment.
func (p *Provisioner) State(gateway types.NamespacedName, class string) (st State, ok bool) {
	d := p.owned.deployment(gateway.Namespace, provision.Name(gateway.Name, class))
	if d == nil {
		return State{}, false
	}
	return stateOf(d), true
}

func stateOf(d *appsv1.Deployment) State {
	st := State{Ready: d.Status.ReadyReplicas, Replicas: 1}
	if d.Spec.Replicas != nil {
		st.Replicas = *d.Spec.Replicas
	}
	if d.Status.ObservedGeneration < d.Generation {
		st.Problem = "the Deployment's controller has not seen its latest spec yet"
	}
	for _, c := range d.Status.Conditions {
		switch {
		case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue:
			st.Problem = fmt.Sprintf("%s: %s", c.Reason, c.Message)
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse:
			st.Problem = fmt.Sprintf("%s: %s", c.Reason, c.Message)
		}
	}
	return st
}
