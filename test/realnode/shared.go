package realnode

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/tunnelgate/tunnelgate/test/kubeenv"
	"github.com/tunnelgate/tunnelgate/test/netns"
)

// Shared is one control plane and one node for all the tests of a
// package, started when a test first asks and stopped, the node first,
// after the last:
//
//	var shared = realnode.NewShared(kubeenv.Options{}, realnode.Options{})
//
//	func TestMain(m *testing.M) { shared.Main(m) }
//
//	func TestPod(t *testing.T) {
//		env, node := shared.Node(t)
//		...
//	}
type Shared struct {
	envOpts kubeenv.Options
	opts    Options
	once    sync.Once
	env     *kubeenv.Env
	node    *Node
	err     error
}

// NewShared returns a Shared that will start a control plane with
// ControlPlane(envOpts) and a node with opts.
func NewShared(envOpts kubeenv.Options, opts Options) *Shared {
	return &Shared{envOpts: envOpts, opts: opts}
}

// Node returns the package's control plane and node, starting them on
// first use. If they cannot start, every test that asks fails (a missing
// binary is a setup error, fixed by `make testenv realnode`); the start
// is not retried.
func (s *Shared) Node(t testing.TB) (*kubeenv.Env, *Node) {
	t.Helper()
	s.once.Do(func() {
		// Not the test's context: both outlive the first test.
		if s.env, s.err = kubeenv.Start(context.Background(), ControlPlane(s.envOpts)); s.err != nil {
			return
		}
		s.node, s.err = StartNode(context.Background(), s.env, s.opts)
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.env, s.node
}

// Main runs the tests in a network namespace of their own (test/netns),
// stops what started, and exits. Call it from TestMain.
func (s *Shared) Main(m *testing.M) {
	netns.Run(func() int { return s.Run(m) })
}

// Run is Main without the namespace and the exit, for a TestMain that
// makes the namespace itself: it returns the tests' exit code, 1 if the
// node left something behind.
func (s *Shared) Run(m *testing.M) int {
	code := m.Run()
	if s.node != nil {
		if err := s.node.Stop(); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			code = 1
		}
	}
	if s.env != nil {
		s.env.Stop()
	}
	return code
}
