package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The quickstart must stay valid: make run serves it.
func TestStandaloneCheckQuickstart(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"standalone", "-check", "-f", "../../examples/quickstart"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"Gateway default/demo", "HTTPRoute default/api", "HTTPRoute default/web", "Attached Routes:  2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// -check fails, naming the route and the reason, when a route would not
// serve as written.
func TestStandaloneCheckReportsBrokenRoute(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../examples/quickstart/gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	route := `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: orphan, namespace: default}
spec:
  parentRefs: [{name: demo}]
  hostnames: [www.example.com]
  rules: [{backendRefs: [{name: missing, port: 80}]}]
`
	if err := os.WriteFile(filepath.Join(dir, "all.yaml"), append(src, route...), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"standalone", "-check", "-f", dir}, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1\nstderr:\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "default/orphan") || !strings.Contains(errb.String(), "BackendNotFound") {
		t.Errorf("stderr does not name the route and reason:\n%s", errb.String())
	}
}

func TestStandaloneUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"standalone"}, &out, &errb); code != 2 {
		t.Fatalf("no -f: exit %d, want 2", code)
	}
	errb.Reset()
	if code := run([]string{"standalone", "-check", "-f", "/nonexistent/path"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "/nonexistent/path") {
		t.Fatalf("missing path: exit %d, stderr %q", code, errb.String())
	}
}
