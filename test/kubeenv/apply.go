package kubeenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// FieldManager is the server-side apply field manager of Apply.
const FieldManager = "kubeenv"

// Apply creates or updates every object in docs (YAML or JSON, documents
// separated by ---; a List's items count as documents) by server-side apply,
// forcing conflicts. A namespaced object without a namespace goes to
// "default". It stops at the first object the server rejects and returns
// that error wrapped, so apierrors.IsInvalid and friends work on it; the
// objects before it stay applied.
func (e *Env) Apply(ctx context.Context, docs []byte) error {
	objs, err := decodeDocs(docs)
	if err != nil {
		return err
	}
	for _, u := range objs {
		if err := e.apply(ctx, u); err != nil {
			return err
		}
		// Objects of a new CRD's kind may follow: wait until it is served.
		if u.GroupVersionKind().GroupKind() == gvkCRD {
			if err := e.waitEstablished(ctx, []string{u.GetName()}); err != nil {
				return err
			}
		}
	}
	return nil
}

var gvkCRD = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// apply server-side applies one object.
func (e *Env) apply(ctx context.Context, u *unstructured.Unstructured) error {
	gvk := u.GroupVersionKind()
	m, err := e.mapping(ctx, gvk)
	if err != nil {
		return fmt.Errorf("kubeenv: apply %s %s: %w", gvk.Kind, u.GetName(), err)
	}
	var ri dynamic.ResourceInterface = e.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if u.GetNamespace() == "" {
			u.SetNamespace("default")
		}
		ri = e.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
	} else {
		u.SetNamespace("")
	}
	_, err = ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("kubeenv: apply %s %s: %w", gvk.Kind, objectName(u), err)
	}
	return nil
}

// mapping finds the resource of a kind. A kind not found may belong to a CRD
// installed since discovery was cached: reset the cache and look again for
// a moment, as an Established CRD takes a little while to reach discovery.
func (e *Env) mapping(ctx context.Context, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	deadline := time.Now().Add(3 * time.Second)
	for {
		m, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil || !meta.IsNoMatchError(err) || time.Now().After(deadline) {
			return m, err
		}
		e.mapper.Reset()
		select {
		case <-ctx.Done():
			return nil, errors.Join(err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// decodeDocs splits a YAML or JSON stream into objects.
func decodeDocs(docs []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(docs)))
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		doc, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("kubeenv: read document %d: %w", i, err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("kubeenv: document %d: %w", i, err)
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
			continue // empty, or comments only
		}
		obj, _, err := unstructured.UnstructuredJSONScheme.Decode(js, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("kubeenv: document %d: %w", i, err)
		}
		switch o := obj.(type) {
		case *unstructured.Unstructured:
			out = append(out, o)
		case *unstructured.UnstructuredList:
			for j := range o.Items {
				out = append(out, &o.Items[j])
			}
		default:
			return nil, fmt.Errorf("kubeenv: document %d: unexpected %T", i, obj)
		}
	}
}

func objectName(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}
