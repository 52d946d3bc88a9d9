// This file implements leader election.

package controller

import (
	"context"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderOptions configure the election among controller replicas. Only the
// leader writes statuses and events (and, later, Cloudflare); every
// replica keeps its caches warm and publishes configs, so a new leader
// takes over within one lease and proxies never notice.
type LeaderOptions struct {
	Namespace, Name string // the Lease
	Identity        string // this replica (the pod name)
	LeaseDuration   time.Duration
	RenewDeadline   time.Duration
	RetryPeriod     time.Duration
}

// RunLeaderElection campaigns for the Lease until ctx ends, telling c when
// it leads. A lost lease makes this replica a follower again and it
// campaigns anew; it does not exit, as it still serves proxies.
func RunLeaderElection(ctx context.Context, kube kubernetes.Interface, o LeaderOptions, c *Controller) error {
	if o.LeaseDuration == 0 {
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.Namespace, o.Name, kube.CoreV1(), kube.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: o.Identity})
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   o.LeaseDuration,
			RenewDeadline:   o.RenewDeadline,
			RetryPeriod:     o.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            o.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) {
					c.log.Info("leading: writing statuses", "identity", o.Identity)
					c.SetLeader(true)
				},
				OnStoppedLeading: func() {
					c.log.Info("no longer leading", "identity", o.Identity)
					c.SetLeader(false)
				},
			},
		})
		if err != nil {
			return err
		}
		le.Run(ctx)
	}
	return nil
}
