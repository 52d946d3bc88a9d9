package chart

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const (
	chartDir = "../../chart"
	// The release the golden renders are made for.
	releaseName = "tunnelgate"
	releaseNS   = "tunnelgate-system"
)

// valuesFiles maps each chart/ci/NAME-values.yaml to NAME (default, ha,
// minimal, ...): the cases every check runs over.
func valuesFiles(t testing.TB) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, f := range files {
		m[strings.TrimSuffix(filepath.Base(f), "-values.yaml")] = f
	}
	for _, want := range []string{"default", "ha", "minimal"} {
		if m[want] == "" {
			t.Fatalf("chart/ci/%s-values.yaml is missing", want)
		}
	}
	return m
}

// sortedNames returns the keys of valuesFiles in order, so subtests run in
// a stable order.
func sortedNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// helm runs helm with its own empty configuration, cache and data
// directories, so the user's repositories and plugins play no part, and
// returns its standard output; an exit other than 0 is an error carrying
// standard error.
func helm(t testing.TB, env []string, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmPath(t), args...)
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"),
	)
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// render runs helm template for the golden release with a values file and
// extra flags.
func render(t testing.TB, values string, extra ...string) (string, error) {
	t.Helper()
	args := append([]string{"template", releaseName, chartDir, "--namespace", releaseNS, "-f", values}, extra...)
	return helm(t, nil, args...)
}

// mustRender is render that fails the test on an error.
func mustRender(t testing.TB, values string, extra ...string) string {
	t.Helper()
	out, err := render(t, values, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// decode splits a multi-document YAML stream into objects.
func decode(t testing.TB, stream string) []*unstructured.Unstructured {
	t.Helper()
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("rendered YAML does not decode: %v", err)
		}
		if m == nil {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// find returns the object of a kind whose name ends with suffix, failing
// the test when there is none or several.
func find(t testing.TB, objs []*unstructured.Unstructured, kind, suffix string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind && strings.HasSuffix(o.GetName(), suffix) {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s named *%s, found %d", kind, suffix, len(found))
	}
	return found[0]
}

// has says whether there is an object of kind named *suffix.
func has(objs []*unstructured.Unstructured, kind, suffix string) bool {
	for _, o := range objs {
		if o.GetKind() == kind && strings.HasSuffix(o.GetName(), suffix) {
			return true
		}
	}
	return false
}

// typed converts an unstructured object into the typed one out points at.
func typed[T any](t testing.TB, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return out
}
