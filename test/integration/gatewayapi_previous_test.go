package integration_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/kubeenv"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// A cluster whose Gateway API CRDs are still the previous release's
// (kubeenv.PreviousGatewayAPI, v1.6) keeps working: the class is accepted
// and SupportedVersion=True says what upgrading brings and how; routes are
// served, session persistence written in v1.6's shape (sessionName) the
// same as v1.7's; and the Gateway's status, whose address routability
// those CRDs cannot hold, is written once, not again on every sync.
func TestPreviousGatewayAPICRDsKeepWorking(t *testing.T) {
	dir, err := kubeenv.GatewayAPICRDsOf(kubeenv.PreviousGatewayAPI)
	if err != nil {
		t.Fatal(err)
	}
	env := kubeenv.StartT(t, kubeenv.Options{GatewayAPICRDs: dir})
	cl := newClients(t, env)
	ctx := context.Background()
	ns := namespace(t, cl, "previous")
	const controllerName = "tunnelgate.dev/test-previous"

	keyDir := t.TempDir()
	writeSessionKeys(t, keyDir, "session key P 0123456789abcdef", "")
	r := startControllerOpts(t, cl, controllerName, ctlOpts{syncInterval: 20 * time.Millisecond, sessionKeys: keyDir})
	addr := netns.Addr(130).String()
	fixture.Backend(t, addr+":8080", "backend-previous")
	v16 := strings.Replace(sessionObjects(ns, controllerName, []string{addr}),
		"sessionPersistence: {type: Cookie, cookie: {name: pin}}", "sessionPersistence: {sessionName: pin, type: Cookie}", 1)
	if !strings.Contains(v16, "sessionName: pin") {
		t.Fatal("sessionObjects no longer writes the rule this test rewrites in v1.6's shape")
	}
	if err := env.Apply(ctx, []byte(v16)); err != nil {
		t.Fatal(err)
	}

	gwAPI := cl.gw.GatewayV1()
	eventually(t, 20*time.Second, "class accepted, SupportedVersion=True naming the upgrade", func() (bool, string) {
		gc, err := gwAPI.GatewayClasses().Get(ctx, "sessions", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if ok, why := condIs(gc.Status.Conditions, "Accepted", metav1.ConditionTrue, "Accepted"); !ok {
			return false, why
		}
		if ok, why := condIs(gc.Status.Conditions, "SupportedVersion", metav1.ConditionTrue, "SupportedVersion"); !ok {
			return false, why
		}
		msg := findCond(gc.Status.Conditions, "SupportedVersion").Message
		for _, want := range []string{kubeenv.PreviousGatewayAPI, "served as v1.6.x", translate.SupportedBundle + ".0/standard-install.yaml"} {
			if !strings.Contains(msg, want) {
				return false, "SupportedVersion message " + msg + " does not say " + want
			}
		}
		return true, ""
	})

	_, url, stop := startProxyCached(t, r, filepath.Join(t.TempDir(), "proxy.json"))
	defer stop()
	eventually(t, 20*time.Second, "the route served, with its v1.6-shaped session cookie", func() (bool, string) {
		res := sessGet(t, url, "")
		return res.status == 200 && res.cookie != "", res.body
	})

	// The Gateway's status settles: with v1.6 CRDs the controller does not
	// write the routability they would prune, so it has nothing to write
	// again.
	eventually(t, 20*time.Second, "Gateway programmed", func() (bool, string) {
		g, err := gwAPI.Gateways(ns).Get(ctx, "gw", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return condIs(g.Status.Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
	})
	before, err := gwAPI.Gateways(ns).Get(ctx, "gw", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // 50 syncs
	after, err := gwAPI.Gateways(ns).Get(ctx, "gw", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if before.ResourceVersion != after.ResourceVersion {
		t.Errorf("the Gateway's status is written again and again (resourceVersion %s, then %s): %+v", before.ResourceVersion, after.ResourceVersion, after.Status.Addresses)
	}
}
