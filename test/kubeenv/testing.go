package kubeenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
)

// Shared is one Env for all the tests of a package. It starts when a test
// first asks for it, so a run whose -run filter selects none of them (go
// test -run '^TestAllocs' ./...) pays nothing, and stops after the last:
//
//	var shared = kubeenv.NewShared(kubeenv.Options{})
//
//	func TestMain(m *testing.M) { shared.Main(m) }
//
//	func TestRoute(t *testing.T) {
//		env := shared.Env(t)
//		...
//	}
//
// Tests may call Env in parallel. They share one cluster, so each should
// use its own namespace (Env.Namespace) or object names.
type Shared struct {
	opts Options
	once sync.Once
	env  *Env
	err  error
}

// NewShared returns a Shared that will start an Env with opts.
func NewShared(opts Options) *Shared { return &Shared{opts: opts} }

// Env returns the package's Env, starting it on first use. If it cannot
// start, every test that asks fails (it does not skip: a missing binary is
// a setup error, fixed by `make testenv`); the start is not retried.
func (s *Shared) Env(t testing.TB) *Env {
	t.Helper()
	s.once.Do(func() {
		// Not the test's context: the Env outlives the first test.
		s.env, s.err = Start(context.Background(), s.opts)
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.env
}

// Main runs the tests, stops the Env if one started, and exits. Call it
// from TestMain.
func (s *Shared) Main(m *testing.M) { os.Exit(s.Run(m)) }

// Run is Main without the exit: it returns the tests' exit code, for a
// TestMain with more to clean up.
func (s *Shared) Run(m *testing.M) int {
	code := m.Run()
	if s.env != nil {
		s.env.Stop()
	}
	return code
}

// StartT starts an Env for one test, which fails at once if it cannot,
// and stops it when the test ends.
func StartT(t testing.TB, opts Options) *Env {
	t.Helper()
	e, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

// Namespace creates a namespace for t, named after the test plus a random
// suffix, so tests sharing an Env do not see each other's objects. It is
// not deleted: the Env is thrown away whole, and without the controller
// manager a deleted namespace would stay Terminating anyway. With the
// controller manager, it returns once the namespace's default
// ServiceAccount exists, as Pods are refused until then.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	name := namespaceName(t.Name())
	doc := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", name)
	if err := e.Apply(t.Context(), []byte(doc)); err != nil {
		t.Fatal(err)
	}
	if e.opts.ControllerManager {
		if err := e.waitServiceAccount(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

// namespaceName turns a test name into a DNS label: lower case letters,
// digits and dashes, at most 63 characters with the suffix.
func namespaceName(test string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(test) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	base := strings.Trim(b.String(), "-")
	if len(base) > 50 {
		base = strings.TrimRight(base[:50], "-")
	}
	if base == "" {
		base = "test"
	}
	return fmt.Sprintf("%s-%05x", base, rand.IntN(1<<20))
}
