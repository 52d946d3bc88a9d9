// This file writes the statuses of our own kinds through the dynamic
// client.

package controller

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
)

// typedStatusAPI is a statusAPI for one of our kinds, which have no typed
// client: the dynamic client's objects converted to and from T.
type typedStatusAPI[T any] struct {
	r    dynamic.ResourceInterface
	kind string
}

func (a typedStatusAPI[T]) Get(ctx context.Context, name string, opts metav1.GetOptions) (*T, error) {
	u, err := a.r.Get(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	return fromUnstructured[T](u)
}

func (a typedStatusAPI[T]) UpdateStatus(ctx context.Context, obj *T, opts metav1.UpdateOptions) (*T, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(v1alpha1.SchemeGroupVersion.String())
	u.SetKind(a.kind)
	out, err := a.r.UpdateStatus(ctx, u, opts)
	if err != nil {
		return nil, err
	}
	return fromUnstructured[T](out)
}

func fromUnstructured[T any](u *unstructured.Unstructured) (*T, error) {
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, err
	}
	return out, nil
}
