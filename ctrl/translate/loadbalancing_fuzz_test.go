package translate

import (
	"regexp"
	"strings"
	"testing"
)

// crdHealthPath is what the CRD takes as healthCheck.path: its pattern
// and its rule (config/crd/tunnelgate.dev_loadbalancingpolicies.yaml).
var crdHealthPath = regexp.MustCompile(`^/[A-Za-z0-9._~!$&'()*+,=:@/-]*$`)

func crdTakesHealthPath(p string) bool {
	return len(p) <= 1024 && crdHealthPath.MatchString(p) && !strings.Contains(p, "//") && !strings.Contains(p, "/./") &&
		!strings.Contains(p, "/../") && !strings.HasSuffix(p, "/.") && !strings.HasSuffix(p, "/..")
}

// FuzzHealthPath checks that the API server and the controller agree on
// health paths: what one takes the other does (standalone mode has only
// the controller's check), and neither panics.
func FuzzHealthPath(f *testing.F) {
	for _, s := range []string{"/", "/.well-known/tunnelgate/health", "/a/", "//", "/.", "/..", "/a/./b", "/a/../b", "/..a", "/a..",
		"/a;b", "/a%2Fb", "/a?b", "/a#b", "a", "", "/a b", "/~user", "/@:=+$,'()*!&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if got, want := checkHealthPath(p) == nil, crdTakesHealthPath(p); got != want {
			t.Fatalf("path %q: the controller takes it: %v; the CRD: %v", p, got, want)
		}
	})
}
