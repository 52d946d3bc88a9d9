package proxycmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/internal/pprofgate"
	"github.com/tunnelgate/tunnelgate/test/testnet"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

func TestProxyCommandRefusesBadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no config", []string{}, 2, "-config is required"},
		{"missing file", []string{"-config", filepath.Join(dir, "nope.json")}, 1, "no such file"},
		{"not json", []string{"-config", write("bad.json", "{")}, 1, "decoding config"},
		{"unknown field", []string{"-config", write("field.json", `{"schema":"tunnelgate.dev/dataplane/v1","colour":"blue"}`)}, 1, "unknown field"},
		{"undefined cluster", []string{"-config", write("cluster.json", `{"schema":"tunnelgate.dev/dataplane/v1","listeners":[{"name":"l"}],
			"routes":[{"namespace":"n","name":"r","created":"2026-01-01T00:00:00Z","listeners":["l"],"rules":[{"backends":[{"cluster":"x","weight":1}]}]}]}`)}, 1, `cluster "x" is not defined`},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), "tunnelgate proxy", c.args, &stdout, &stderr, nil); code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%s: exit %d (want %d), stderr %q (want %q)", c.name, code, c.code, stderr.String(), c.want)
		}
	}
}

// exampleProxyConfig is examples/proxy/config.json, decoded.
func exampleProxyConfig(t *testing.T) proxycfg.Config {
	t.Helper()
	b, err := os.ReadFile("../../../examples/proxy/config.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg proxycfg.Config
	if err := proxycfg.DecodeConfig(b, &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The example in examples/proxy must stay a config the proxy accepts.
func TestExampleProxyConfigLoads(t *testing.T) {
	cfg := exampleProxyConfig(t)
	p := dataplane.New(dataplane.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := p.Load(&cfg); err != nil {
		t.Fatal(err)
	}
}

// A config file is served under its content's version, the one the
// controller and standalone mode would give the same content, whatever
// version the file names.
func TestProxyCommandStampsTheContentVersion(t *testing.T) {
	cfg := exampleProxyConfig(t)
	want, err := proxycfg.ContentVersion(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Version = "written-by-hand"
	named, err := json.Marshal(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(file, named, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"../../../examples/proxy/config.json", file} {
		bound, stop, stderr := runProxyCommand(t, "-config", path)
		code, body := testnet.GetWithToken("http://"+bound.Admin+"/config", "")
		if code != 200 || body != "version: "+want+"\n" {
			t.Errorf("%s: /config %d %q; want version %s\n%s", path, code, body, want, stderr)
		}
		if code := stop(); code != 0 {
			t.Errorf("%s: proxy exited %d\n%s", path, code, stderr)
		}
	}
}

// -pprof reaches the proxy's admin listener: by default pprof answers a
// loopback peer (as kubectl port-forward connects); off turns it off. The
// refusal of other peers is tested through a real non-loopback socket in
// test/integration (TestAdminPprofOnlyForLoopback).
func TestProxyCommandPprofFlag(t *testing.T) {
	const cfg = "../../../examples/proxy/config.json"
	for _, c := range []struct {
		args []string
		code int
		body string
	}{
		{nil, 200, ""},
		{[]string{"-pprof", "loopback"}, 200, ""},
		{[]string{"-pprof", "all"}, 200, ""},
		{[]string{"-pprof", "off"}, 404, pprofgate.Disabled},
	} {
		b, stop, stderr := runProxyCommand(t, append([]string{"-config", cfg}, c.args...)...)
		code, body := testnet.GetWithToken("http://"+b.Admin+"/debug/pprof/cmdline", "")
		if code != c.code || (c.body != "" && body != c.body) {
			t.Errorf("%v: /debug/pprof/cmdline %d %q; want %d %q\n%s", c.args, code, body, c.code, c.body, stderr)
		}
		if code, _ := testnet.GetWithToken("http://"+b.Admin+"/healthz", ""); code != 200 {
			t.Errorf("%v: /healthz %d", c.args, code)
		}
		if code := stop(); code != 0 {
			t.Errorf("%v: proxy exited %d\n%s", c.args, code, stderr)
		}
	}
}

// -listen-listener-ports serves the config's listeners on their own
// ports, beside the origin listener; with -listen-gateways it is a usage
// error.
func TestProxyCommandListenerPorts(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"-config", "../../../examples/proxy/config.json", "-listen-gateways", "-listen-listener-ports"}
	want := "-listen-gateways and -listen-listener-ports exclude each other"
	if code := Main(context.Background(), "tunnelgate proxy", args, &stdout, &stderr, nil); code != 2 || !strings.Contains(stderr.String(), want) {
		t.Errorf("%q: exit %d, stderr %q; want 2 and %q", args, code, stderr.String(), want)
	}

	example, err := os.ReadFile("../../../examples/proxy/config.json")
	if err != nil {
		t.Fatal(err)
	}
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	onPort := strings.Replace(string(example), `"port": 80,`, fmt.Sprintf(`"port": %d,`, port), 1)
	if onPort == string(example) {
		t.Fatal("the example's listener is no longer on port 80")
	}
	file := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(file, []byte(onPort), 0o600); err != nil {
		t.Fatal(err)
	}
	b, stop, errs := runProxyCommand(t, "-config", file, "-listen-listener-ports")
	// The example's /old redirects: no backend needed.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, addr := range []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), b.Origin} {
		req, _ := http.NewRequest("GET", "http://"+addr+"/old", nil)
		req.Host = "localhost"
		res, err := noFollow.Do(req)
		if err != nil {
			t.Errorf("%s: %v", addr, err)
			continue
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMovedPermanently || !strings.HasSuffix(res.Header.Get("Location"), "/api") {
			t.Errorf("%s: %d, Location %q; want the example's redirect", addr, res.StatusCode, res.Header.Get("Location"))
		}
	}
	if code := stop(); code != 0 {
		t.Errorf("proxy exited %d\n%s", code, errs)
	}
}
