// This file merges and writes statuses.

package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// Status writes follow one rule: compare the status the translation wants
// with the object's current one (from the informer cache, then from the
// API server on a conflict), and write only when they differ. So a write
// that failed is simply retried by the next sync, a new leader writes
// nothing that is already right, and a resync writes nothing at all.
//
// Routes and policies are shared with other controllers: their status
// lists entries per parent (or ancestor) and controller. We replace the
// entries carrying our controllerName and keep everyone else's.

// writeStatuses writes what changed between the last written output and
// out (all of out when written is nil), and reports how many objects it
// wrote and how many failed. Errors are joined: one object failing does
// not stop the others; each is recorded on ctx's span. When stop says so
// before an object, it returns errSuperseded with the rest unwritten.
func (c *Controller) writeStatuses(ctx context.Context, written, out *translate.Output, stop func() bool) (wrote, failed int, err error) {
	ch := translate.Diff(written, out)
	var errs []error
	span := trace.SpanFromContext(ctx)
	stopped := false
	note := func(write func() (bool, error)) {
		if stopped = stopped || stop(); stopped {
			return
		}
		w, err := write()
		if w {
			wrote++
		}
		if err != nil && !apierrors.IsNotFound(err) { // gone: nothing to write
			errs = append(errs, err)
			span.RecordError(err)
		}
	}
	for _, name := range ch.GatewayClasses {
		note(func() (bool, error) { return c.writeGatewayClass(ctx, name, out.GatewayClasses[name]) })
	}
	for _, k := range ch.Gateways {
		note(func() (bool, error) { return c.writeGateway(ctx, k, out.Gateways[k]) })
	}
	for _, k := range ch.ListenerSets {
		note(func() (bool, error) { return c.writeListenerSet(ctx, k, out.ListenerSets[k]) })
	}
	for _, k := range ch.HTTPRoutes {
		note(func() (bool, error) { return c.writeHTTPRoute(ctx, k, out.HTTPRoutes[k]) })
	}
	for _, k := range ch.GRPCRoutes {
		note(func() (bool, error) { return c.writeGRPCRoute(ctx, k, out.GRPCRoutes[k]) })
	}
	for _, k := range ch.TCPRoutes {
		note(func() (bool, error) { return c.writeTCPRoute(ctx, k, out.TCPRoutes[k]) })
	}
	for _, k := range ch.TLSRoutes {
		note(func() (bool, error) { return c.writeTLSRoute(ctx, k, out.TLSRoutes[k]) })
	}
	for _, k := range ch.BackendTLSPolicies {
		note(func() (bool, error) { return c.writePolicy(ctx, k, out.BackendTLSPolicies[k]) })
	}
	for _, k := range ch.AccessPolicies {
		note(func() (bool, error) { return c.writeAccessPolicy(ctx, k, out.AccessPolicies[k]) })
	}
	for _, k := range ch.LoadBalancingPolicies {
		note(func() (bool, error) { return c.writeLBPolicy(ctx, k, out.LoadBalancingPolicies[k]) })
	}
	for _, k := range ch.DNSPolicies {
		note(func() (bool, error) { return c.writeDNSPolicy(ctx, k, out.DNSPolicies[k]) })
	}
	failed = len(errs)
	if stopped {
		errs = append(errs, errSuperseded)
	}
	return wrote, failed, errors.Join(errs...)
}

// update is one object's read-modify-write: get reads the object (from the
// cache first, from the API server after a conflict), change makes the
// wanted copy and says whether it differs, put writes it.
func update[T any](ctx context.Context, get func(fresh bool) (*T, error), change func(cur *T) (*T, bool), put func(*T) error) (wrote bool, err error) {
	fresh := false
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := get(fresh)
		fresh = true
		if err != nil {
			return err
		}
		want, differs := change(cur)
		if !differs {
			return nil
		}
		if err := put(want); err != nil {
			return err
		}
		wrote = true
		return nil
	})
	return wrote, err
}

// cached returns get's object from an informer's store by key, or from
// the API server when fresh is asked (after a conflict) or the cache has
// nothing.
func cached[T any](c *Controller, kind string, k types.NamespacedName, fresh bool, apiGet func() (*T, error)) (*T, error) {
	if !fresh {
		if o, ok := c.w.lookup(kind, k.Namespace, k.Name).(*T); ok {
			return o, nil
		}
	}
	return apiGet()
}

func (c *Controller) writeGatewayClass(ctx context.Context, name string, res *translate.GatewayClassResult) (bool, error) {
	api := c.gw.GatewayV1().GatewayClasses()
	get := func(fresh bool) (*gwv1.GatewayClass, error) {
		return cached(c, "GatewayClass", types.NamespacedName{Name: name}, fresh, func() (*gwv1.GatewayClass, error) {
			return api.Get(ctx, name, metav1.GetOptions{})
		})
	}
	if res == nil {
		return false, nil // no longer ours: its new controller writes it
	}
	// The finalizer is metadata: its own write, before the status.
	wroteFin, err := update(ctx, get, func(cur *gwv1.GatewayClass) (*gwv1.GatewayClass, bool) {
		has := slices.Contains(cur.Finalizers, translate.GatewayClassFinalizer)
		if has == res.Finalizer {
			return nil, false
		}
		want := cur.DeepCopy()
		if res.Finalizer {
			want.Finalizers = append(want.Finalizers, translate.GatewayClassFinalizer)
		} else {
			want.Finalizers = slices.DeleteFunc(want.Finalizers, func(f string) bool { return f == translate.GatewayClassFinalizer })
		}
		return want, true
	}, func(o *gwv1.GatewayClass) error {
		_, err := api.Update(ctx, o, metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	})
	if err != nil {
		return wroteFin, fmt.Errorf("GatewayClass %s finalizer: %w", name, err)
	}
	wrote, err := update(ctx, func(bool) (*gwv1.GatewayClass, error) {
		return get(wroteFin) // the cache may not have our finalizer write yet
	}, func(cur *gwv1.GatewayClass) (*gwv1.GatewayClass, bool) {
		if equality.Semantic.DeepEqual(cur.Status.Conditions, res.Status.Conditions) {
			return nil, false
		}
		want := cur.DeepCopy()
		want.Status.Conditions = res.Status.Conditions
		return want, true
	}, func(o *gwv1.GatewayClass) error {
		_, err := api.UpdateStatus(ctx, o, metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	})
	if err != nil {
		err = fmt.Errorf("GatewayClass %s status: %w", name, err)
	}
	return wrote || wroteFin, err
}

// statusAPI is the part of a typed client a status write needs.
type statusAPI[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*T, error)
	UpdateStatus(ctx context.Context, obj *T, opts metav1.UpdateOptions) (*T, error)
}

// writeStatus is update for a status subresource: change makes the wanted
// copy of the current object, or says nothing differs.
func writeStatus[T any](ctx context.Context, c *Controller, kind string, k types.NamespacedName, api statusAPI[T], change func(cur *T) (*T, bool)) (bool, error) {
	wrote, err := update(ctx, func(fresh bool) (*T, error) {
		return cached(c, kind, k, fresh, func() (*T, error) { return api.Get(ctx, k.Name, metav1.GetOptions{}) })
	}, change, func(o *T) error {
		_, err := api.UpdateStatus(ctx, o, metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	})
	if err != nil {
		err = fmt.Errorf("%s %s status: %w", kind, k, err)
	}
	return wrote, err
}

func (c *Controller) writeGateway(ctx context.Context, k types.NamespacedName, st *gwv1.GatewayStatus) (bool, error) {
	if st == nil {
		return false, nil // no longer ours: its new controller writes it
	}
	return writeStatus(ctx, c, "Gateway", k, c.gw.GatewayV1().Gateways(k.Namespace),
		replaceStatus(st, func(o *gwv1.Gateway) *gwv1.GatewayStatus { return &o.Status }, (*gwv1.Gateway).DeepCopy))
}

func (c *Controller) writeListenerSet(ctx context.Context, k types.NamespacedName, st *gwv1.ListenerSetStatus) (bool, error) {
	if st == nil {
		return false, nil
	}
	return writeStatus(ctx, c, "ListenerSet", k, c.gw.GatewayV1().ListenerSets(k.Namespace),
		replaceStatus(st, func(o *gwv1.ListenerSet) *gwv1.ListenerSetStatus { return &o.Status }, (*gwv1.ListenerSet).DeepCopy))
}

func (c *Controller) writeHTTPRoute(ctx context.Context, k types.NamespacedName, ours []gwv1.RouteParentStatus) (bool, error) {
	return writeStatus(ctx, c, "HTTPRoute", k, c.gw.GatewayV1().HTTPRoutes(k.Namespace),
		mergeStatus(ours, c.ourParent, func(o *gwv1.HTTPRoute) *[]gwv1.RouteParentStatus { return &o.Status.Parents }, (*gwv1.HTTPRoute).DeepCopy))
}

func (c *Controller) writeGRPCRoute(ctx context.Context, k types.NamespacedName, ours []gwv1.RouteParentStatus) (bool, error) {
	return writeStatus(ctx, c, "GRPCRoute", k, c.gw.GatewayV1().GRPCRoutes(k.Namespace),
		mergeStatus(ours, c.ourParent, func(o *gwv1.GRPCRoute) *[]gwv1.RouteParentStatus { return &o.Status.Parents }, (*gwv1.GRPCRoute).DeepCopy))
}

func (c *Controller) writeTCPRoute(ctx context.Context, k types.NamespacedName, ours []gwv1.RouteParentStatus) (bool, error) {
	return writeStatus(ctx, c, "TCPRoute", k, c.gw.GatewayV1().TCPRoutes(k.Namespace),
		mergeStatus(ours, c.ourParent, func(o *gwv1.TCPRoute) *[]gwv1.RouteParentStatus { return &o.Status.Parents }, (*gwv1.TCPRoute).DeepCopy))
}

func (c *Controller) writeTLSRoute(ctx context.Context, k types.NamespacedName, ours []gwv1.RouteParentStatus) (bool, error) {
	return writeStatus(ctx, c, "TLSRoute", k, c.gw.GatewayV1().TLSRoutes(k.Namespace),
		mergeStatus(ours, c.ourParent, func(o *gwv1.TLSRoute) *[]gwv1.RouteParentStatus { return &o.Status.Parents }, (*gwv1.TLSRoute).DeepCopy))
}

func (c *Controller) writePolicy(ctx context.Context, k types.NamespacedName, ours []gwv1.PolicyAncestorStatus) (bool, error) {
	ourAncestor := func(a gwv1.PolicyAncestorStatus) bool { return string(a.ControllerName) == c.controllerName }
	return writeStatus(ctx, c, "BackendTLSPolicy", k, c.gw.GatewayV1().BackendTLSPolicies(k.Namespace),
		mergeStatus(ours, ourAncestor, func(o *gwv1.BackendTLSPolicy) *[]gwv1.PolicyAncestorStatus { return &o.Status.Ancestors }, (*gwv1.BackendTLSPolicy).DeepCopy))
}

func (c *Controller) writeAccessPolicy(ctx context.Context, k types.NamespacedName, ours []gwv1.PolicyAncestorStatus) (bool, error) {
	ourAncestor := func(a gwv1.PolicyAncestorStatus) bool { return string(a.ControllerName) == c.controllerName }
	api := typedStatusAPI[v1alpha1.AccessPolicy]{c.opts.Dynamic.Resource(gvrAccessPolicies).Namespace(k.Namespace), v1alpha1.KindAccessPolicy}
	return writeStatus(ctx, c, v1alpha1.KindAccessPolicy, k, api,
		mergeStatus(ours, ourAncestor, func(o *v1alpha1.AccessPolicy) *[]gwv1.PolicyAncestorStatus { return &o.Status.Ancestors }, (*v1alpha1.AccessPolicy).DeepCopy))
}

func (c *Controller) writeLBPolicy(ctx context.Context, k types.NamespacedName, ours []gwv1.PolicyAncestorStatus) (bool, error) {
	ourAncestor := func(a gwv1.PolicyAncestorStatus) bool { return string(a.ControllerName) == c.controllerName }
	api := typedStatusAPI[v1alpha1.LoadBalancingPolicy]{c.opts.Dynamic.Resource(gvrLBPolicies).Namespace(k.Namespace), v1alpha1.KindLoadBalancingPolicy}
	return writeStatus(ctx, c, v1alpha1.KindLoadBalancingPolicy, k, api,
		mergeStatus(ours, ourAncestor, func(o *v1alpha1.LoadBalancingPolicy) *[]gwv1.PolicyAncestorStatus { return &o.Status.Ancestors }, (*v1alpha1.LoadBalancingPolicy).DeepCopy))
}

func (c *Controller) writeDNSPolicy(ctx context.Context, k types.NamespacedName, ours []gwv1.PolicyAncestorStatus) (bool, error) {
	ourAncestor := func(a gwv1.PolicyAncestorStatus) bool { return string(a.ControllerName) == c.controllerName }
	api := typedStatusAPI[v1alpha1.DNSPolicy]{c.opts.Dynamic.Resource(gvrDNSPolicies).Namespace(k.Namespace), v1alpha1.KindDNSPolicy}
	return writeStatus(ctx, c, v1alpha1.KindDNSPolicy, k, api,
		mergeStatus(ours, ourAncestor, func(o *v1alpha1.DNSPolicy) *[]gwv1.PolicyAncestorStatus { return &o.Status.Ancestors }, (*v1alpha1.DNSPolicy).DeepCopy))
}

func (c *Controller) ourParent(p gwv1.RouteParentStatus) bool {
	return string(p.ControllerName) == c.controllerName
}

// replaceStatus is a change for a status we own whole: the part field
// points at becomes want when it differs.
func replaceStatus[T, S any](want *S, field func(*T) *S, deepCopy func(*T) *T) func(*T) (*T, bool) {
	return func(cur *T) (*T, bool) {
		if equality.Semantic.DeepEqual(field(cur), want) {
			return nil, false
		}
		out := deepCopy(cur)
		*field(out) = *want
		return out, true
	}
}

// mergeStatus is a change for a status list shared with other controllers
// (route parents, policy ancestors): see mergeOurs.
func mergeStatus[T, E any](ours []E, ourEntry func(E) bool, list func(*T) *[]E, deepCopy func(*T) *T) func(*T) (*T, bool) {
	return func(cur *T) (*T, bool) {
		merged, differs := mergeOurs(*list(cur), ours, ourEntry)
		if !differs {
			return nil, false
		}
		out := deepCopy(cur)
		*list(out) = merged
		return out, true
	}
}

// mergeOurs replaces our entries in a shared status list with ours,
// keeping other controllers' entries in place and in order, and reports
// whether that changes anything.
func mergeOurs[E any](cur, ours []E, ourEntry func(E) bool) ([]E, bool) {
	merged := make([]E, 0, len(cur)+len(ours))
	for _, e := range cur {
		if !ourEntry(e) {
			merged = append(merged, e)
		}
	}
	merged = append(merged, ours...)
	if len(merged) == len(cur) && (len(cur) == 0 || equality.Semantic.DeepEqual(cur, merged)) {
		return nil, false
	}
	return merged, true
}

// fieldManager names our writes in managedFields.
const fieldManager = "tunnelgate-controller"
