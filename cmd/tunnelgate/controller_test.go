package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/test/fixture"
	"github.com/tunnelgate/tunnelgate/test/kubeenv"
	"github.com/tunnelgate/tunnelgate/test/prism"
	"github.com/tunnelgate/tunnelgate/test/testmetrics"
	"github.com/tunnelgate/tunnelgate/test/testnet"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// The controller command, from its command line, against a real API
// server: it accepts our GatewayClass, reports ready, serves metrics, and
// serves the config only to a proxy with the token (in plain HTTP, which
// it must be told: -config-insecure-plaintext). A second class with a
// tunnel makes it call Cloudflare (Prism, answering from Cloudflare's
// spec), so the API call metrics are served too.
func TestControllerCommand(t *testing.T) {
	env := kubeenv.StartT(t, kubeenv.Options{})
	cf := prism.StartT(t)
	ctx := context.Background()
	if err := env.Apply(ctx, []byte(fixture.ClassYAML("cmd", translate.DefaultControllerName, "")+`---
apiVersion: v1
kind: Secret
metadata: {name: cloudflare, namespace: default}
stringData: {token: prism-token}
---
apiVersion: tunnelgate.dev/v1alpha1
kind: GatewayClassConfig
metadata: {name: cmd-tunnel}
spec:
  credentialsRef: {namespace: default, name: cloudflare}
  accountID: 023e105f4ecef8ad9ca31a8372d0c353
  tunnel: {id: f70ff985-a4ef-4643-bbbc-4a0ed4fc8415}
---
`+fixture.ClassYAML("cmd-tunnel", translate.DefaultControllerName, "cmd-tunnel"))); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	configAddr, adminAddr := testproc.FreeLoopback(t), testproc.FreeLoopback(t) // never the same port twice
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan int, 1)
	stderr := &testproc.SyncBuffer{}
	go func() {
		done <- controllerCommand(ctx, []string{"-kubeconfig", env.Kubeconfig(), "-controller-name", "tunnelgate.dev/controller",
			"-sync-interval", "10ms", "-admin", adminAddr, "-config-listen", configAddr, "-config-token-file", token,
			"-config-insecure-plaintext", "-leader-election-namespace", "default", "-leader-election-name", "tunnelgate-cmd",
			"-identity", "test", "-cloudflare-api-url", cf.URL()}, io.Discard, stderr, nil)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("controller exited %d:\n%s", code, stderr)
		} else if t.Failed() {
			t.Logf("controller log:\n%s", stderr)
		}
	}()

	gw, err := gwclient.NewForConfig(rest.CopyConfig(env.Config))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the GatewayClass accepted", func() bool {
		gc, err := gw.GatewayV1().GatewayClasses().Get(ctx, "cmd", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range gc.Status.Conditions {
			if c.Type == "Accepted" && c.Status == metav1.ConditionTrue {
				return true
			}
		}
		return false
	})
	waitFor(t, "ready", func() bool { code, _ := testnet.GetWithToken("http://"+adminAddr+"/readyz", ""); return code == 200 })
	if code, body := testnet.GetWithToken("http://"+adminAddr+"/metrics", ""); code != 200 || !strings.Contains(body, "tunnelgate_controller_syncs_total") ||
		!strings.Contains(body, "tunnelgate_controller_leader 1") {
		t.Errorf("metrics: %d\n%s", code, body)
	}
	// pprof by default answers loopback peers, as kubectl port-forward
	// connects (other peers: test/integration TestAdminPprofOnlyForLoopback).
	if code, body := testnet.GetWithToken("http://"+adminAddr+"/debug/pprof/cmdline", ""); code != 200 || body == "" {
		t.Errorf("pprof from loopback: %d %q", code, body)
	}
	if code, _ := testnet.GetWithToken("http://"+configAddr+"/v1/config", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("config with a wrong token: %d, want 401", code)
	}
	code, body := testnet.GetWithToken("http://"+configAddr+"/v1/config", "s3cret")
	if code != 200 || !strings.Contains(body, `"schema"`) {
		t.Fatalf("config with the token: %d %.200s", code, body)
	}
	// A proxy's long poll that ends unchanged, so every metric has been
	// recorded before the catalogue check.
	var doc struct{ Version string }
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	q := url.Values{configwatch.ParamVersion: {doc.Version}, configwatch.ParamWait: {"10ms"}}
	if code, _ := testnet.GetWithToken("http://"+configAddr+"/v1/config?"+q.Encode(), "s3cret"); code != http.StatusNotModified {
		t.Errorf("long poll for the same version: %d, want 304", code)
	}
	waitFor(t, "a Cloudflare API call counted", func() bool {
		_, body := testnet.GetWithToken("http://"+adminAddr+"/metrics", "")
		return strings.Contains(body, `tunnelgate_cloudflare_api_calls_total{operation="tunnel_get"`)
	})
	if code, body := testnet.GetWithToken("http://"+adminAddr+"/metrics", ""); code != 200 {
		t.Errorf("metrics: %d\n%s", code, body)
	} else {
		testmetrics.CheckCatalogue(t, "Controller", body)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The config API carries the proxies' token and configs with private
// keys, so the controller refuses to serve it in plain HTTP unless told
// to, before it touches the cluster (the kubeconfig here does not exist).
// That it starts when told is TestControllerCommand. Without
// -config-listen it listens on loopback only.
func TestControllerRefusesPlaintextConfigAPI(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"controller", "-kubeconfig", filepath.Join(dir, "no-kubeconfig"), "-config-token-file", token}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"no TLS, no flag", nil, []string{"needs TLS", "-config-tls-cert and -config-tls-key", "-config-insecure-plaintext"}},
		{"on every interface", []string{"-config-listen", ":8081"}, []string{"needs TLS", "-config-insecure-plaintext"}},
		{"TLS and plaintext", []string{"-config-tls-cert", token, "-config-tls-key", token, "-config-insecure-plaintext"}, []string{"exclude each other"}},
	} {
		var stdout, stderr bytes.Buffer
		code := run(slices.Concat(base, c.args), &stdout, &stderr)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2\n%s", c.name, code, stderr.String())
		}
		for _, w := range c.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%s: stderr does not say %q:\n%s", c.name, w, stderr.String())
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"controller", "-h"}, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), `(default "127.0.0.1:8081")`) {
		t.Errorf("-h: exit %d; want -config-listen to default to 127.0.0.1:8081:\n%s", code, stderr.String())
	}
}

// -gateway-address takes a comma-separated list; each entry is an IP or a
// hostname, in the order given, with its routability after "=".
func TestGatewayAddressesFlag(t *testing.T) {
	got := gatewayAddresses(" prod.example.com,10.0.0.7,, gw.ns.svc.cluster.local = Cluster ")
	want := []string{"Hostname prod.example.com ", "IPAddress 10.0.0.7 ", "Hostname gw.ns.svc.cluster.local Cluster"}
	var have []string
	for _, a := range got {
		have = append(have, string(*a.Type)+" "+a.Value+" "+string(*a.Routability))
	}
	if !slices.Equal(have, want) {
		t.Errorf("gatewayAddresses: %v; want %v", have, want)
	}
	if gatewayAddresses("") != nil {
		t.Error("no flag: want no addresses")
	}
}

// -planes and -planes-ca-file go together, and what they name must hold:
// settings a plane can run with, and a PEM certificate.
func TestControllerPlanesFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	token := write("token", "s3cret\n")
	good := write("planes.json", `{"proxyImage":"p:1","cloudflaredImage":"c:1","controllerURL":"https://c.ns.svc:8081",
		"tunnelProtocol":"http2","gracePeriod":"30s","terminationGracePeriodSeconds":60,"proxyResources":{},"cloudflaredResources":{}}`)
	bad := write("bad.json", `{"proxyImage":"p:1"}`)
	notPEM := write("ca.txt", "not a certificate")
	base := []string{"controller", "-kubeconfig", filepath.Join(dir, "no-kubeconfig"), "-config-token-file", token, "-config-insecure-plaintext"}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"settings without a CA", []string{"-planes", good}, "-planes needs -planes-ca-file"},
		{"a CA without settings", []string{"-planes-ca-file", notPEM}, "without -planes"},
		{"settings a plane cannot run with", []string{"-planes", bad, "-planes-ca-file", notPEM}, "controllerURL"},
		{"a CA that is no certificate", []string{"-planes", good, "-planes-ca-file", notPEM}, "no PEM certificate"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(slices.Concat(base, c.args), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%s: exit %d, want 2 saying %q:\n%s", c.name, code, c.want, stderr.String())
		}
	}
}
