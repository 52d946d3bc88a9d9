package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tunnelgate/tunnelgate/test/netns"
	"github.com/tunnelgate/tunnelgate/test/testpki"
)

// A BackendTLSPolicy's CA may be a ClusterTrustBundle (certificates.k8s.io,
// cluster-scoped): the controller watches them, and the policy follows the
// bundle as it comes and goes.
func TestClusterTrustBundleIsABackendCA(t *testing.T) {
	env := shared.Env(t)
	cl := newClients(t, env)
	ctx := context.Background()
	ns := namespace(t, cl, "trustbundle")
	const controllerName = "tunnelgate.dev/test-trustbundle"
	bundle := "tunnelgate-test-" + ns
	startController(t, cl, controllerName, nil, "")

	indent := "    " + strings.ReplaceAll(strings.TrimSpace(string(testpki.NewCA(t, "backend-ca").PEM)), "\n", "\n    ")
	objs := basicObjects(ns, "trustbundle", controllerName, netns.Addr(12).String()) + fmt.Sprintf(`
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: app-tls, namespace: %[1]s}
spec:
  targetRefs: [{group: "", kind: Service, name: app}]
  validation:
    caCertificateRefs: [{group: certificates.k8s.io, kind: ClusterTrustBundle, name: %[2]s}]
    hostname: app.example.com
`, ns, bundle)
	if err := env.Apply(ctx, []byte(objs)); err != nil {
		t.Fatal(err)
	}
	policyIs := func(typ string, status metav1.ConditionStatus, reason string) func() (bool, string) {
		return func() (bool, string) {
			p, err := cl.gw.GatewayV1().BackendTLSPolicies(ns).Get(ctx, "app-tls", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, a := range p.Status.Ancestors {
				if string(a.ControllerName) == controllerName {
					return condIs(a.Conditions, typ, status, reason)
				}
			}
			return false, "no ancestor status of ours"
		}
	}
	eventually(t, 20*time.Second, "policy refused while the bundle is missing", policyIs("Accepted", metav1.ConditionFalse, "NoValidCACertificate"))

	if err := env.Apply(ctx, []byte(fmt.Sprintf(`
apiVersion: certificates.k8s.io/v1
kind: ClusterTrustBundle
metadata: {name: %s}
spec:
  trustBundle: |
%s
`, bundle, indent))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cl.kube.CertificatesV1().ClusterTrustBundles().Delete(context.Background(), bundle, metav1.DeleteOptions{})
	})
	eventually(t, 20*time.Second, "policy accepted with the bundle", policyIs("Accepted", metav1.ConditionTrue, "Accepted"))
	eventually(t, 20*time.Second, "policy's references resolved", policyIs("ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs"))

	if err := cl.kube.CertificatesV1().ClusterTrustBundles().Delete(ctx, bundle, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "policy refused again once the bundle is gone", policyIs("Accepted", metav1.ConditionFalse, "NoValidCACertificate"))
}
