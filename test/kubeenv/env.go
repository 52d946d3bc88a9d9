package kubeenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// Options say what to start. The zero value starts etcd and kube-apiserver
// with every CRD installed.
type Options struct {
	// ControllerManager also runs kube-controller-manager: Deployments get
	// ReplicaSets and Pods, Services get EndpointSlices, namespaces are
	// deleted, garbage is collected. Without it (faster, ~100 MB less) the
	// ServiceAccount admission plugin is off, so pods can be created.
	ControllerManager bool
	// Log receives every process's output, each line prefixed with the
	// process name. Output also always goes to <Dir>/<name>.log, and a
	// failed start quotes its end. When nil and $TUNNELGATE_TESTENV_LOG is
	// set, os.Stderr.
	Log io.Writer
	// NoCRDs skips installing the Gateway API and tunnelgate CRDs.
	NoCRDs bool
	// GatewayAPICRDs is a directory of Gateway API CRD files to install.
	// Default: $TUNNELGATE_GATEWAY_API_CRDS, else the experimental channel
	// of the sigs.k8s.io/gateway-api version in go.mod, found in the module
	// cache with `go list -m`.
	GatewayAPICRDs string
	// BinDir holds the binaries; default BinDir().
	BinDir string
	// APIServerFlags and ControllerManagerFlags are added last to the
	// command lines (--flag=value), so they override kubeenv's.
	APIServerFlags, ControllerManagerFlags []string
	// StartTimeout bounds Start; default 2 minutes, for a loaded machine.
	StartTimeout time.Duration
	// Keep leaves Dir (logs, certificates, etcd data) on disk after Stop,
	// as does $TUNNELGATE_TESTENV_KEEP, to look at after a failure.
	Keep bool
}

// Env is a running control plane.
type Env struct {
	// Config is an admin client config (group system:masters). Copy it with
	// rest.CopyConfig before changing it.
	Config *rest.Config
	// Dir is the Env's own directory: pki/, etcd/, kubeconfig, *.log.
	Dir string
	// EtcdURL is etcd's client URL, for tests that look at raw storage.
	EtcdURL string

	opts       Options
	pki        *pki
	admin      identity
	host       string
	kubeconfig string
	procs      []*process // in start order; stopped in reverse
	apiserver  *process
	// controllerManager runs when Options.ControllerManager.
	controllerManager *process
	log               io.Writer // shared by the processes; nil for none
	dyn               dynamic.Interface
	mapper            *restmapper.DeferredDiscoveryRESTMapper
	stopOnce          sync.Once
}

// Start starts a control plane and returns when it serves requests and
// every CRD is Established (and, with ControllerManager, the controllers
// run). On 2 cores the apiserver is ready after 3 to 4 s, the CRDs add 1.5
// to 2 s and the controller manager about 6 s. Call Stop when done.
func Start(ctx context.Context, opts Options) (*Env, error) {
	if opts.BinDir == "" {
		dir, err := BinDir()
		if err != nil {
			return nil, err
		}
		opts.BinDir = dir
	}
	if err := findBinaries(opts.BinDir); err != nil {
		return nil, err
	}
	if opts.Log == nil && os.Getenv("TUNNELGATE_TESTENV_LOG") != "" {
		opts.Log = os.Stderr
	}
	if os.Getenv("TUNNELGATE_TESTENV_KEEP") != "" {
		opts.Keep = true
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	var err error
	for range 3 {
		var e *Env
		if e, err = start(ctx, opts); err == nil {
			return e, nil
		}
		if !errors.Is(err, errPortInUse) {
			break
		}
	}
	return nil, err
}

// start makes one attempt; on failure it stops what it started.
func start(ctx context.Context, opts Options) (_ *Env, err error) {
	dir, err := testproc.OwnedTempDir(dirPrefix)
	if err != nil {
		return nil, err
	}
	e := &Env{Dir: dir, opts: opts}
	if opts.Log != nil {
		e.log = &syncWriter{w: opts.Log}
	}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	if e.pki, err = newPKI(filepath.Join(dir, "pki")); err != nil {
		return nil, err
	}
	if e.admin.cert, e.admin.key, err = e.pki.clientCert("kubeenv-admin", "system:masters"); err != nil {
		return nil, err
	}
	began := time.Now()
	if e.EtcdURL, err = e.startEtcd(ctx); err != nil {
		return nil, err
	}
	e.logf("etcd ready at %s after %v", e.EtcdURL, since(began))
	if e.host, err = e.startAPIServer(ctx, e.EtcdURL); err != nil {
		return nil, err
	}
	e.logf("kube-apiserver ready at %s after %v", e.host, since(began))
	e.Config = e.restConfig(e.host, e.admin)
	if e.kubeconfig, err = e.writeKubeconfig("kubeconfig", "kubeenv-admin", e.admin.cert, e.admin.key); err != nil {
		return nil, err
	}
	if e.dyn, err = dynamic.NewForConfig(e.Config); err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(e.Config)
	if err != nil {
		return nil, err
	}
	e.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))

	// The controller manager starts while the CRDs install: both take
	// seconds, and neither needs the other.
	var cm *process
	if opts.ControllerManager {
		if cm, err = e.startControllerManager(); err != nil {
			return nil, err
		}
		e.controllerManager = cm
	}
	if !opts.NoCRDs {
		if err := e.installCRDs(ctx); err != nil {
			return nil, err
		}
		e.logf("CRDs established after %v", since(began))
	}
	if cm != nil {
		if err := e.waitControllerManager(ctx, cm); err != nil {
			return nil, err
		}
		e.logf("kube-controller-manager ready after %v", since(began))
	}
	return e, nil
}

// logf notes progress in Options.Log, if any.
func (e *Env) logf(format string, args ...any) {
	if e.log != nil {
		fmt.Fprintf(e.log, "kubeenv: "+format+"\n", args...)
	}
}

func since(t time.Time) time.Duration { return time.Since(t).Round(10 * time.Millisecond) }

// start runs one of the binaries in the Env's directory.
func (e *Env) start(bin string, args []string) (*process, error) {
	p, err := startProcess(bin, filepath.Join(e.opts.BinDir, bin), args, e.Dir, e.log)
	if err != nil {
		return nil, err
	}
	e.procs = append(e.procs, p)
	return p, nil
}

// waitFor polls ready until it is true, p exits, or ctx ends.
func (e *Env) waitFor(ctx context.Context, p *process, what string, ready func() bool) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if ready() {
			return nil
		}
		if err := p.exited(); err != nil {
			if p.logContains("address already in use") {
				return fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubeenv: waiting for %s: %w; end of the %s log:\n%s", what, ctx.Err(), p.name, p.tail(30))
		case <-tick.C:
		}
	}
}

// Stop kills the processes and removes Dir (unless Keep). It is safe to
// call more than once and on a partly started Env.
func (e *Env) Stop() {
	e.stopOnce.Do(func() {
		began := time.Now()
		for i := len(e.procs) - 1; i >= 0; i-- {
			e.procs[i].stop(10 * time.Second)
		}
		e.logf("stopped after %v", since(began))
		if e.opts.Keep {
			e.logf("kept %s", e.Dir)
			return
		}
		_ = os.RemoveAll(e.Dir)
	})
}

// Kubeconfig returns the path of an admin kubeconfig file, for running a
// binary (tunnelgate controller, kubectl) against the Env.
func (e *Env) Kubeconfig() string { return e.kubeconfig }

// CAFile returns the path of the CA certificate that signed the apiserver's
// serving certificate and that it trusts for client certificates.
func (e *Env) CAFile() string { return e.pki.path(fileCACert) }

// UserConfig returns a client config that authenticates as user in groups,
// by a client certificate from the Env's CA: RBAC applies to it, so a test
// can check what a ServiceAccount-like identity may do.
func (e *Env) UserConfig(user string, groups ...string) (*rest.Config, error) {
	cert, key, err := e.pki.clientCert(user, groups...)
	if err != nil {
		return nil, err
	}
	return e.restConfig(e.host, identity{cert, key}), nil
}

// Dynamic returns the admin dynamic client Apply uses.
func (e *Env) Dynamic() dynamic.Interface { return e.dyn }

// RESTMapper returns the discovery-backed mapper Apply uses; it is reset
// whenever a kind is not found, so it learns CRDs installed later.
func (e *Env) RESTMapper() *restmapper.DeferredDiscoveryRESTMapper { return e.mapper }
