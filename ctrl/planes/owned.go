// This file implements the informers of what planes own, indexed by
// Gateway.

package planes

import (
	"maps"
	"reflect"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/tunnelgate/tunnelgate/ctrl/provision"
)

// owned watches the objects of every plane: those labelled managed by us
// and naming a Gateway. The informers list only those, so the memory they
// take grows with planes, not with the cluster.
type owned struct {
	factory  kubeinformers.SharedInformerFactory
	byKind   map[string]cache.SharedIndexInformer
	secrets  cache.SharedIndexInformer
	services cache.SharedIndexInformer
	deploys  cache.SharedIndexInformer
	pods     cache.SharedIndexInformer
	changed  func(k objectKey, gateway types.NamespacedName, resourceVersion string)
	stateNew func()
}

// planeSelector picks the objects of planes.
func planeSelector() string {
	managed, _ := labels.NewRequirement("app.kubernetes.io/managed-by", selection.Equals, []string{provision.ManagedBy})
	gateway, _ := labels.NewRequirement(provision.LabelGatewayName, selection.Exists, nil)
	return labels.NewSelector().Add(*managed, *gateway).String()
}

func newOwned(kube kubernetes.Interface, changed func(objectKey, types.NamespacedName, string), stateChanged func()) (*owned, error) {
	f := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0,
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = planeSelector() }))
	o := &owned{factory: f, changed: changed, stateNew: stateChanged, byKind: map[string]cache.SharedIndexInformer{
		"Secret":                  f.Core().V1().Secrets().Informer(),
		"ServiceAccount":          f.Core().V1().ServiceAccounts().Informer(),
		"Service":                 f.Core().V1().Services().Informer(),
		"Deployment":              f.Apps().V1().Deployments().Informer(),
		"PodDisruptionBudget":     f.Policy().V1().PodDisruptionBudgets().Informer(),
		"HorizontalPodAutoscaler": f.Autoscaling().V2().HorizontalPodAutoscalers().Informer(),
		"NetworkPolicy":           f.Networking().V1().NetworkPolicies().Informer(),
	}}
	o.secrets, o.services, o.deploys = o.byKind["Secret"], o.byKind["Service"], o.byKind["Deployment"]
	for kind, inf := range o.byKind {
		if err := inf.AddIndexers(cache.Indexers{byGateway: gatewayIndex}); err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(o.handler(kind)); err != nil {
			return nil, err
		}
	}
	// The plane's Pods carry its labels too: what their containers wait
	// for (an image, a crash) is a state to report, not a change to undo.
	o.pods = f.Core().V1().Pods().Informer()
	if err := o.pods.AddIndexers(cache.Indexers{byGateway: gatewayIndex}); err != nil {
		return nil, err
	}
	if _, err := o.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { stateChanged() },
		UpdateFunc: func(any, any) { stateChanged() },
		DeleteFunc: func(any) { stateChanged() },
	}); err != nil {
		return nil, err
	}
	return o, nil
}

// handler tells changed of every change to an object of kind that is not
// its status alone; a Deployment's status change is a state change.
func (o *owned) handler(kind string) cache.ResourceEventHandler {
	tell := func(obj any) {
		a := accessor(obj)
		if a == nil {
			return
		}
		gw := types.NamespacedName{Namespace: a.GetNamespace(), Name: a.GetLabels()[provision.LabelGatewayName]}
		o.changed(objectKey{kind, a.GetNamespace(), a.GetName()}, gw, a.GetResourceVersion())
		if kind == "Service" || kind == "Secret" {
			// A Service's ClusterIP is the address of a plane that serves
			// in the cluster, and the credentials Secret holds the relay's
			// credentials: states to report, whoever made the change.
			o.stateNew()
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: tell,
		UpdateFunc: func(old, now any) {
			a, b := accessor(old), accessor(now)
			if a == nil || b == nil || a.GetResourceVersion() == b.GetResourceVersion() {
				return
			}
			if statusOnly(kind, a, b) {
				if kind == "Deployment" {
					o.stateNew()
				}
				return
			}
			tell(now)
		},
		DeleteFunc: func(obj any) {
			tell(obj)
			if kind == "Deployment" {
				o.stateNew()
			}
		},
	}
}

// statusOnly reports whether an update changed only an object's status:
// kinds with a generation bump it for every change but the status's.
func statusOnly(kind string, a, b metav1.Object) bool {
	switch kind {
	case "Deployment", "PodDisruptionBudget", "HorizontalPodAutoscaler", "NetworkPolicy":
		return a.GetGeneration() == b.GetGeneration() && maps.Equal(a.GetLabels(), b.GetLabels()) &&
			maps.Equal(a.GetAnnotations(), b.GetAnnotations()) && reflect.DeepEqual(a.GetOwnerReferences(), b.GetOwnerReferences())
	}
	return false
}

func accessor(obj any) metav1.Object {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	a, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return a
}

func (o *owned) start(stop <-chan struct{}) { o.factory.Start(stop) }

func (o *owned) synced() []cache.InformerSynced {
	out := []cache.InformerSynced{o.pods.HasSynced}
	for _, inf := range o.byKind {
		out = append(out, inf.HasSynced)
	}
	return out
}

// secret is a plane Secret from the cache, or nil.
func (o *owned) secret(namespace, name string) *corev1.Secret {
	return cached[corev1.Secret](o.secrets, namespace, name)
}

// service is a plane's Service from the cache, or nil.
func (o *owned) service(namespace, name string) *corev1.Service {
	return cached[corev1.Service](o.services, namespace, name)
}

// deployment is a plane's Deployment from the cache, or nil.
func (o *owned) deployment(namespace, name string) *appsv1.Deployment {
	return cached[appsv1.Deployment](o.deploys, namespace, name)
}

// cached is an object of an informer's cache, or nil.
func cached[T any](inf cache.SharedIndexInformer, namespace, name string) *T {
	obj, ok, _ := inf.GetStore().GetByKey(namespace + "/" + name)
	if !ok {
		return nil
	}
	t, _ := obj.(*T)
	return t
}

// podsOf lists the Pods of a plane's Deployment, by its selector labels.
func (o *owned) podsOf(d *appsv1.Deployment) []*corev1.Pod {
	if d.Spec.Selector == nil {
		return nil
	}
	match := labels.SelectorFromSet(d.Spec.Selector.MatchLabels)
	objs, _ := o.pods.GetIndexer().ByIndex(byGateway, d.Namespace+"/"+d.Spec.Selector.MatchLabels[provision.LabelGatewayName])
	var out []*corev1.Pod
	for _, obj := range objs {
		if p, ok := obj.(*corev1.Pod); ok && match.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

// byGateway indexes plane objects by "namespace/gateway-name".
const byGateway = "gateway"

func gatewayIndex(obj any) ([]string, error) {
	a := accessor(obj)
	if a == nil {
		return nil, nil
	}
	return []string{a.GetNamespace() + "/" + a.GetLabels()[provision.LabelGatewayName]}, nil
}

// objectsOf lists the objects of a Gateway's plane: labelled with its
// name and controlled by a Gateway of that name (and of that UID, unless
// uid is empty).
func (o *owned) objectsOf(gateway types.NamespacedName, uid types.UID) []objectKey {
	var out []objectKey
	for _, kind := range slices.Sorted(maps.Keys(o.byKind)) {
		objs, _ := o.byKind[kind].GetIndexer().ByIndex(byGateway, gateway.String())
		for _, obj := range objs {
			a := accessor(obj)
			if a == nil {
				continue
			}
			c := metav1.GetControllerOfNoCopy(a)
			if c == nil || c.Kind != "Gateway" || c.Name != gateway.Name || (uid != "" && c.UID != uid) {
				continue
			}
			out = append(out, objectKey{kind, a.GetNamespace(), a.GetName()})
		}
	}
	return out
}

// hasDeletable reports whether a Gateway has a plane object that retiring
// its plane deletes (any but its credentials Secret).
func (o *owned) hasDeletable(gateway types.NamespacedName) bool {
	return slices.ContainsFunc(o.objectsOf(gateway, ""), func(k objectKey) bool { return k.kind != "Secret" })
}
