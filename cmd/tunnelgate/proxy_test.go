package main

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane"
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
		{"no config", []string{"proxy"}, 2, "-config is required"},
		{"missing file", []string{"proxy", "-config", filepath.Join(dir, "nope.json")}, 1, "no such file"},
		{"not json", []string{"proxy", "-config", write("bad.json", "{")}, 1, "decoding config"},
		{"unknown field", []string{"proxy", "-config", write("field.json", `{"schema":"tunnelgate.dev/dataplane/v1","colour":"blue"}`)}, 1, "unknown field"},
		{"undefined cluster", []string{"proxy", "-config", write("cluster.json", `{"schema":"tunnelgate.dev/dataplane/v1","listeners":[{"name":"l"}],
			"routes":[{"namespace":"n","name":"r","created":"2026-01-01T00:00:00Z","listeners":["l"],"rules":[{"backends":[{"cluster":"x","weight":1}]}]}]}`)}, 1, `cluster "x" is not defined`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(c.args, &stdout, &stderr); code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%s: exit %d (want %d), stderr %q (want %q)", c.name, code, c.code, stderr.String(), c.want)
		}
	}
}

// The example in examples/proxy must stay a config the proxy accepts.
func TestExampleProxyConfigLoads(t *testing.T) {
	b, err := os.ReadFile("../../examples/proxy/config.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg dataplane.Config
	if err := dataplane.DecodeConfig(b, &cfg); err != nil {
		t.Fatal(err)
	}
	p := dataplane.New(dataplane.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := p.Load(&cfg); err != nil {
		t.Fatal(err)
	}
}
