package kubelet

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// leaseNamespace holds the Nodes' heartbeat Leases, which the node
// lifecycle controller reads to decide a Node is alive.
const leaseNamespace = "kube-node-lease"

// heartbeatEvery renews the Lease well within the controller's grace
// period (40 s, lease duration 40 s).
const heartbeatEvery = 10 * time.Second

// nodeCapacity is what the Node reports as its capacity and allocatable,
// and what a container's limit that is not set counts as in the downward
// API (downward.go), as the kubelet defaults it.
func nodeCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("8"),
		corev1.ResourceMemory:           resource.MustParse("16Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		corev1.ResourcePods:             resource.MustParse("250"),
	}
}

// registerNode creates (or takes over) the Node, Ready, with the bridge's
// address, the port logs are served on, and its first Lease.
func (k *Kubelet) registerNode(ctx context.Context, logPort int) error {
	nodes := k.kube.CoreV1().Nodes()
	capacity := nodeCapacity()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: k.opts.NodeName, Labels: map[string]string{
			corev1.LabelHostname: k.opts.NodeName, corev1.LabelOSStable: "linux",
		}},
		Spec: corev1.NodeSpec{PodCIDR: k.opts.PodCIDR.String(), PodCIDRs: []string{k.opts.PodCIDR.String()}},
	}
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = nodes.Get(ctx, k.opts.NodeName, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	now := metav1.Now()
	status := corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "tunnelgate test kubelet is ready", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: now, LastTransitionTime: now},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(logPort)}},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: k.net.gateway.String()},
			{Type: corev1.NodeHostName, Address: k.opts.NodeName},
		},
		NodeInfo: corev1.NodeSystemInfo{
			OperatingSystem: "linux", Architecture: "amd64",
			KubeletVersion: "v1.37.1-tunnelgate-test", ContainerRuntimeVersion: "tunnelgate-test://1",
		},
	}
	// The controller manager writes a new Node too (taints, its CIDR), so
	// the status goes on the latest version, again after a conflict.
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := nodes.Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status = status
		_, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	return k.renewLease(ctx)
}

// heartbeat renews the Node's Lease until ctx ends.
func (k *Kubelet) heartbeat(ctx context.Context) {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := k.renewLease(ctx); err != nil && ctx.Err() == nil {
				k.opts.Log.Warn("renewing the node lease", "err", err)
			}
		}
	}
}

func (k *Kubelet) renewLease(ctx context.Context) error {
	leases := k.kube.CoordinationV1().Leases(leaseNamespace)
	now := metav1.NowMicro()
	l, err := leases.Get(ctx, k.opts.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		node, err := k.kube.CoreV1().Nodes().Get(ctx, k.opts.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.opts.NodeName, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: types.UID(node.UID),
			}}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(k.opts.NodeName), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now,
			},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	l.Spec.RenewTime = &now
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}
