package kubeenv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tunnelgate/tunnelgate/config/crd"
)

var gvrCRD = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs applies the Gateway API CRDs and ours, and waits until the
// apiserver serves every one of them.
func (e *Env) installCRDs(ctx context.Context) error {
	dir, err := gatewayAPICRDDir(e.opts.GatewayAPICRDs)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	slices.Sort(files)
	streams := map[string][]byte{"tunnelgate CRDs": crd.YAML()}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("kubeenv: read Gateway API CRDs: %w", err)
		}
		streams[f] = b
	}
	var crds []*unstructured.Unstructured
	for _, src := range slices.Sorted(maps.Keys(streams)) {
		objs, err := decodeDocs(streams[src])
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		for _, u := range objs {
			// The directory also holds a ValidatingAdmissionPolicy that
			// guards CRD upgrades on real clusters; a fresh Env has none.
			if u.GetKind() == "CustomResourceDefinition" {
				crds = append(crds, u)
			}
		}
	}
	// The apiserver spends most of the time compiling each CRD's schema and
	// CEL rules; four at once use both cores (1.5 s instead of 2.7 s).
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 4)
		errs  = make([]error, len(crds))
		names = make([]string, len(crds))
	)
	for i, u := range crds {
		names[i] = u.GetName()
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = e.apply(ctx, u)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(names) < 3 {
		return fmt.Errorf("kubeenv: found no Gateway API CRDs in %s", dir)
	}
	if err := e.waitEstablished(ctx, names); err != nil {
		return err
	}
	e.mapper.Reset()
	return nil
}

// waitEstablished waits until each CRD has condition Established, i.e. its
// resources are served; 30 seconds at most, as a CRD whose names clash
// with another's never is.
func (e *Env) waitEstablished(ctx context.Context, names []string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pending := slices.Clone(names)
	return e.waitFor(ctx, e.apiserver, "CRDs to be Established ("+strings.Join(pending, ", ")+")", func() bool {
		pending = slices.DeleteFunc(pending, func(name string) bool {
			u, err := e.dyn.Resource(gvrCRD).Get(ctx, name, metav1.GetOptions{})
			return err == nil && hasCondition(u, "Established")
		})
		return len(pending) == 0
	})
}

// hasCondition reports whether status.conditions has typ with status True.
func hasCondition(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

// PreviousGatewayAPI is the Gateway API release before the one go.mod
// names, whose CRDs a cluster may still have: tunnelgate keeps serving it
// (ctrl/translate's SupportedVersion). `make testenv` downloads its
// module (test/tools/build.sh reads this line), so tests can install its
// CRDs without the network.
const PreviousGatewayAPI = "v1.6.3"

// GatewayAPICRDsOf is the experimental channel's CRD directory of a
// release of sigs.k8s.io/gateway-api, found in the module cache (never
// downloaded: tests have no network), for Options.GatewayAPICRDs.
func GatewayAPICRDsOf(version string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api@"+version)
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	mod := strings.TrimSpace(string(out))
	if err != nil || mod == "" {
		return "", fmt.Errorf("kubeenv: sigs.k8s.io/gateway-api@%s is not in the module cache (make testenv downloads it): %v %s", version, err, strings.TrimSpace(stderr.String()))
	}
	return filepath.Join(mod, "config", "crd", "experimental"), nil
}

// gatewayAPICRDDir finds the Gateway API CRDs to install: an explicit
// directory, else the experimental channel (a superset of standard, and
// tunnelgate serves experimental fields) of the module version in go.mod.
// The module cache has it once the repository's modules are downloaded, as
// building any test here does.
func gatewayAPICRDDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv("TUNNELGATE_GATEWAY_API_CRDS")
	}
	if dir != "" {
		return dir, nil
	}
	// go test puts its own go first in the PATH of the test binary.
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	mod := strings.TrimSpace(string(out))
	if err != nil || mod == "" {
		return "", fmt.Errorf("kubeenv: locate sigs.k8s.io/gateway-api in the module cache (run `go mod download` in the repository, or set TUNNELGATE_GATEWAY_API_CRDS to a CRD directory): %v %s", err, strings.TrimSpace(stderr.String()))
	}
	return filepath.Join(mod, "config", "crd", "experimental"), nil
}
