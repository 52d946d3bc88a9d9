package main

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// notLinked are the import path prefixes the proxy's binary must not
// depend on, and why: the pages of their package initialisation are what
// a proxy's resident set would carry for nothing.
var notLinked = map[string]string{
	"k8s.io/":                                       "Kubernetes (client-go, the API types, API machinery, klog)",
	"sigs.k8s.io/":                                  "Kubernetes SIGs' modules (the Gateway API types and clients)",
	"github.com/cloudflare/cloudflare-go":           "the Cloudflare API client",
	"github.com/tunnelgate/tunnelgate/ctrl/":        "the controller",
	"github.com/tunnelgate/tunnelgate/api/v1alpha1": "our CRD types (Kubernetes API machinery)",
	"github.com/tunnelgate/tunnelgate/standalone":   "standalone mode (translation, Kubernetes types)",
}

// The binary is the proxy alone: go list -deps names none of the
// controller's packages or their dependencies. A new import that pulls
// one in fails here; move what the proxy needs to a package without them,
// as api/origin holds the origin listeners' defaults.
func TestLinksNoControllerDependency(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			t.Fatalf("go list -deps: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !slices.Contains(deps, "github.com/tunnelgate/tunnelgate/cmd/internal/proxycmd") {
		t.Fatalf("go list -deps listed %d packages, without cmd/internal/proxycmd:\n%s", len(deps), out)
	}
	for prefix, what := range notLinked {
		var linked []string
		for _, dep := range deps {
			if strings.HasPrefix(dep, prefix) {
				linked = append(linked, dep)
			}
		}
		if len(linked) > 0 {
			t.Errorf("tunnelgate-proxy links %d packages of %s, %s: %s", len(linked), prefix, what, strings.Join(linked[:min(len(linked), 3)], ", "))
		}
	}
}
