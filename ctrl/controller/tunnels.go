package controller

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// desiredTunnels is what each of our GatewayClasses with a tunnel wants
// from Cloudflare after a translation: its hostnames, its settings and
// its API token, read from the credentials Secret.
func desiredTunnels(snap *translate.Snapshot, out *translate.Output, controllerName string) []cloudflare.Desired {
	configs := map[string]*v1alpha1.GatewayClassConfig{}
	for _, c := range snap.GatewayClassConfigs {
		configs[c.Name] = c
	}
	var list []cloudflare.Desired
	for _, gc := range snap.GatewayClasses {
		ref := gc.Spec.ParametersRef
		if string(gc.Spec.ControllerName) != controllerName || ref == nil ||
			string(ref.Group) != v1alpha1.Group || string(ref.Kind) != v1alpha1.KindGatewayClassConfig {
			continue
		}
		cfg := configs[ref.Name]
		if cfg == nil || cfg.Spec.Tunnel == nil {
			continue // no tunnel: served by the proxies alone
		}
		d := cloudflare.Desired{Class: gc.Name, Spec: *cfg.Spec.DeepCopy()}
		d.Token, d.Problem = apiToken(snap.Secrets, cfg.Spec.CredentialsRef)
		res := out.GatewayClasses[gc.Name]
		d.Hold = res == nil || !meta.IsStatusConditionTrue(res.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted))
		for _, h := range out.Hostnames {
			if slices.Contains(h.Classes, gc.Name) {
				d.Hostnames = append(d.Hostnames, h)
			}
		}
		list = append(list, d)
	}
	return list
}

// apiToken reads the Cloudflare API token a credentialsRef names, or says
// what is wrong with it.
func apiToken(secrets []*corev1.Secret, ref *v1alpha1.SecretKeyRef) (token, problem string) {
	if ref == nil {
		return "", "credentialsRef is required to manage a tunnel: name the Secret holding the Cloudflare API token"
	}
	key := ref.Key
	if key == "" {
		key = "token"
	}
	for _, s := range secrets {
		if s.Namespace == ref.Namespace && s.Name == ref.Name {
			if v := s.Data[key]; len(v) > 0 {
				return string(v), ""
			}
			return "", fmt.Sprintf("credentials Secret %s/%s has no key %q", ref.Namespace, ref.Name, key)
		}
	}
	return "", fmt.Sprintf("credentials Secret %s/%s not found", ref.Namespace, ref.Name)
}

// TunnelTokenWriter stores tunnel tokens in Secrets for the cloudflared
// sidecars, creating the Secret or changing only its key.
func TunnelTokenWriter(kube kubernetes.Interface) cloudflare.SaveTokenFunc {
	return func(ctx context.Context, ref v1alpha1.SecretKeyRef, token string) error {
		key := ref.Key
		if key == "" {
			key = "token"
		}
		secrets := kube.CoreV1().Secrets(ref.Namespace)
		s, err := secrets.Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = secrets.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace,
					Labels: map[string]string{"app.kubernetes.io/managed-by": "tunnelgate"}},
				Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{key: []byte(token)},
			}, metav1.CreateOptions{FieldManager: fieldManager})
			return err
		}
		if err != nil {
			return err
		}
		if string(s.Data[key]) == token {
			return nil
		}
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[key] = []byte(token)
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	}
}
