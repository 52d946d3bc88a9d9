// This file applies, prunes and deletes one plane's objects.

package planes

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tunnelgate/tunnelgate/ctrl/provision"
)

// objectKey names one object of a plane.
type objectKey struct {
	kind, namespace, name string
}

// appliedObject is what an apply sent and got back: the hash of the
// rendering, and the resourceVersion the server answered with, to know
// our own change when the informer brings it.
type appliedObject struct {
	hash, resourceVersion string
}

// resources are the kinds a plane is made of, by Kind.
var resources = map[string]schema.GroupVersionResource{
	"Secret":                  {Version: "v1", Resource: "secrets"},
	"ServiceAccount":          {Version: "v1", Resource: "serviceaccounts"},
	"Service":                 {Version: "v1", Resource: "services"},
	"Deployment":              {Group: "apps", Version: "v1", Resource: "deployments"},
	"PodDisruptionBudget":     {Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
	"HorizontalPodAutoscaler": {Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"},
	"NetworkPolicy":           {Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
}

// applyPlane applies a wanted plane: its credentials Secret first (the
// Pods mount it), then what provision renders, then deletes what it no
// longer renders.
func (p *Provisioner) applyPlane(ctx context.Context, w Want) error {
	plane := provision.Plane{Gateway: w.Gateway, Params: w.Params, Install: p.opts.Install,
		Secrets: provision.SecretsOf(w.Gateway, &w.Params), Ports: w.Ports, ClusterIP: w.ClusterIP, TunnelRotatedAt: w.TunnelRotatedAt}
	key := types.NamespacedName{Namespace: w.Gateway.Namespace, Name: w.Gateway.Name}
	creds, err := p.credentialsOf(key, plane)
	if err != nil {
		return err
	}
	plane.Relay = creds.relay
	objs, err := provision.Objects(plane)
	if err != nil {
		return err // the CRD refuses what Objects does: a GatewayConfig from before it
	}
	objs = append([]runtime.Object{provision.CredentialsSecret(plane, creds.token, p.opts.CA)}, objs...)
	rendered := map[objectKey]bool{}
	applies := 0
	for _, o := range objs {
		u, err := unstructuredOf(o)
		if err != nil {
			return err
		}
		k := objectKey{u.GetKind(), u.GetNamespace(), u.GetName()}
		rendered[k] = true
		if err := p.replaceService(ctx, k, plane.ClusterIP); err != nil {
			return err
		}
		did, err := p.apply(ctx, k, u)
		if did {
			applies++
		}
		if err != nil {
			p.Stats.add(applies, 0, 0)
			return fmt.Errorf("%s %s/%s: %w", k.kind, k.namespace, k.name, err)
		}
		if k.kind == "Secret" {
			p.remember(key, creds)
		}
	}
	p.Stats.add(applies, 0, 0)
	return p.prune(ctx, w, rendered)
}

// replaceService deletes the plane's Service when it has a ClusterIP other
// than the one wanted, which the API server does not let change, so that
// the apply creates it anew: the Gateway was given another address.
func (p *Provisioner) replaceService(ctx context.Context, k objectKey, clusterIP string) error {
	if k.kind != "Service" || clusterIP == "" {
		return nil
	}
	svc := p.owned.service(k.namespace, k.name)
	if svc == nil || svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == clusterIP {
		return nil
	}
	p.opts.Log.Info("replacing a plane's Service for its Gateway's new address", "namespace", k.namespace, "name", k.name,
		"from", svc.Spec.ClusterIP, "to", clusterIP)
	return p.delete(ctx, k)
}

// apply sends u with server-side apply unless the same rendering was
// applied last and nobody changed the object since. It reports whether it
// sent anything.
func (p *Provisioner) apply(ctx context.Context, k objectKey, u *unstructured.Unstructured) (bool, error) {
	body, err := u.MarshalJSON()
	if err != nil {
		return false, err
	}
	sum := sha256.Sum256(body)
	hash := string(sum[:])
	p.mu.Lock()
	same := p.applied[k].hash == hash
	p.mu.Unlock()
	if same {
		return false, nil
	}
	got, err := p.opts.Dynamic.Resource(resources[k.kind]).Namespace(k.namespace).Patch(ctx, k.name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: provision.ManagedBy, Force: new(true)})
	if err != nil {
		return true, err
	}
	p.mu.Lock()
	p.applied[k] = appliedObject{hash: hash, resourceVersion: got.GetResourceVersion()}
	p.mu.Unlock()
	return true, nil
}

// prune deletes the objects of the plane's kinds that it no longer
// renders (an autoscaler once autoscaling is off).
func (p *Provisioner) prune(ctx context.Context, w Want, rendered map[objectKey]bool) error {
	key := types.NamespacedName{Namespace: w.Gateway.Namespace, Name: w.Gateway.Name}
	var errs []error
	for _, k := range p.owned.objectsOf(key, w.Gateway.UID) {
		if !rendered[k] {
			errs = append(errs, p.delete(ctx, k))
		}
	}
	return errors.Join(errs...)
}

// deletePlane deletes every object of a Gateway's plane but its
// credentials Secret: the Gateway now asks for none. The Secret goes with
// the Gateway (garbage collection), since the controller may not delete
// Secrets; the config API no longer honours its token meanwhile.
func (p *Provisioner) deletePlane(ctx context.Context, key types.NamespacedName) error {
	p.forget(key)
	var errs []error
	for _, k := range p.owned.objectsOf(key, "") {
		if k.kind != "Secret" {
			errs = append(errs, p.delete(ctx, k))
		}
	}
	return errors.Join(errs...)
}

func (p *Provisioner) delete(ctx context.Context, k objectKey) error {
	err := p.opts.Dynamic.Resource(resources[k.kind]).Namespace(k.namespace).Delete(ctx, k.name,
		metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("deleting %s %s/%s: %w", k.kind, k.namespace, k.name, err)
	}
	p.mu.Lock()
	delete(p.applied, k)
	p.mu.Unlock()
	p.Stats.add(0, 1, 0)
	p.opts.Log.Info("plane object deleted", "kind", k.kind, "namespace", k.namespace, "name", k.name)
	return nil
}

// unstructuredOf is o as server-side apply takes it: no status, no
// creation timestamps (a null one would be a field we claim).
func unstructuredOf(o runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	for _, path := range [][]string{{"metadata"}, {"spec", "template", "metadata"}} {
		if meta, ok, _ := unstructured.NestedMap(m, path...); ok {
			delete(meta, "creationTimestamp")
			if err := unstructured.SetNestedMap(m, meta, path...); err != nil {
				return nil, err
			}
		}
	}
	u := &unstructured.Unstructured{Object: m}
	if _, ok := resources[u.GetKind()]; !ok {
		return nil, fmt.Errorf("a plane object of kind %q, which the provisioner does not know", u.GetKind())
	}
	return u, nil
}
