// This file records events.

package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// EventSink records Kubernetes events; client-go's record.EventRecorder is
// one.
type EventSink interface {
	Event(object runtime.Object, eventtype, reason, message string)
}

// apiVersions of the kinds translate reports events on.
var eventAPIVersion = map[string]string{
	"GatewayClass": "gateway.networking.k8s.io/v1", "Gateway": "gateway.networking.k8s.io/v1",
	"ListenerSet": "gateway.networking.k8s.io/v1", "HTTPRoute": "gateway.networking.k8s.io/v1",
	"GRPCRoute": "gateway.networking.k8s.io/v1", "BackendTLSPolicy": "gateway.networking.k8s.io/v1",
	"TCPRoute": "gateway.networking.k8s.io/v1", "TLSRoute": "gateway.networking.k8s.io/v1",
	v1alpha1.KindAccessPolicy: v1alpha1.SchemeGroupVersion.String(), v1alpha1.KindLoadBalancingPolicy: v1alpha1.SchemeGroupVersion.String(),
	v1alpha1.KindDNSPolicy: v1alpha1.SchemeGroupVersion.String(),
}

// recordEvents records the translation's events on their objects. The
// reference carries the object's UID, which kubectl describe matches.
func (c *Controller) recordEvents(evs []translate.Event) {
	if c.opts.Events == nil {
		return
	}
	for _, e := range evs {
		ref := &corev1.ObjectReference{Kind: e.Kind, APIVersion: eventAPIVersion[e.Kind], Namespace: e.Namespace, Name: e.Name}
		if a := accessor(c.w.lookup(e.Kind, e.Namespace, e.Name)); a != nil {
			ref.UID, ref.ResourceVersion = a.GetUID(), a.GetResourceVersion()
		}
		c.opts.Events.Event(ref, e.Type, e.Reason, e.Message)
		c.Stats.EventsRecorded.Add(1)
	}
}
