// This file tests an upgrade from the previous release, and its rollback,
// under load.

package chart

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/tunnelgate/tunnelgate/ctrl/provision"
)

// previousReleaseLink is where test/tools/previous/build.sh points at
// the previous release it built (`make chart-check` runs it).
const previousReleaseLink = "../../.cache/previous-release"

// previousTag tags the previous release's image in the node's containerd,
// beside tunnelgateTag.
const previousTag = "previous"

// previousRelease is the release the upgrade starts from: a commit's
// chart and its image, built by that commit's own release tool.
type previousRelease struct {
	commit string
	chart  string // the chart directory
	image  string // the image's OCI layout
}

func readPreviousRelease(t testing.TB) previousRelease {
	t.Helper()
	dir, err := filepath.EvalSymlinks(previousReleaseLink)
	if err != nil {
		t.Fatalf("no previous release at %s (%v): run `make chart-check`, or bash test/tools/previous/build.sh [COMMIT] in the repository root", previousReleaseLink, err)
	}
	commit, err := os.ReadFile(filepath.Join(dir, "commit"))
	if err != nil {
		t.Fatalf("the previous release in %s is incomplete (%v): run bash test/tools/previous/build.sh [COMMIT] again", dir, err)
	}
	return previousRelease{commit: strings.TrimSpace(string(commit)), chart: filepath.Join(dir, "chart"), image: filepath.Join(dir, "image")}
}

// Upgrades lose nothing. The previous release (the chart and image of
// the commit test/tools/previous built, by default the parent commit) is
// installed on the real node with the CRDs it shipped, serving a Gateway
// on the shared proxies and one with a dedicated plane, each with a route
// to a backend Pod. While visitors' requests for both hostnames go through
// the edge, the new CRDs are applied (server-side) and the release is
// upgraded with helm to the working tree's chart and image, as
// docs/install.md says: the controllers, the shared proxies and the plane
// roll to the new image and serve configs their proxies apply. Then helm
// rolls the release back, CRDs left new, and the Pods roll back to the
// previous image. No request may fail in either.
func TestUpgradeLosesNothing(t *testing.T) {
	prev := readPreviousRelease(t)
	r := newRig(t, "upgrade")
	r.edge.RouteByDNS(r.fake)
	const shared, tenant = "upgrade-s", "upgrade-a"
	for _, ns := range []string{r.ns, shared, tenant} {
		r.dumpPodsOnFailure(t, ns)
	}
	ctx := t.Context()
	previousImage := tunnelgateRepository + ":" + previousTag
	if err := r.node.ImportImage(ctx, previousImage, prev.image); err != nil {
		t.Fatal(err)
	}

	// The new CRDs take every object the previous ones took, and serve
	// it to the previous controller after a rollback.
	problems, err := crdIncompatibilities(crdStream(t, prev.chart), crdStream(t, chartDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("the CRDs of commit %s and the working tree's: %s", prev.commit, p)
	}

	// The cluster has the previous release's CRDs, as one that runs it
	// would; the node is shared, so the current ones are put back after.
	t.Cleanup(func() {
		if err := r.env.Apply(context.Background(), crdStream(t, chartDir)); err != nil {
			t.Errorf("putting the current CRDs back: %v", err)
		}
	})
	if err := r.env.Apply(ctx, crdStream(t, prev.chart)); err != nil {
		t.Fatalf("the previous release's CRDs: %v", err)
	}
	if _, err := r.helm(t, append([]string{"install", r.name, prev.chart, "--namespace", r.ns, "--create-namespace"},
		r.values("image.tag="+previousTag)...)...); err != nil {
		t.Fatal(err)
	}
	t.Logf("installed the release of commit %s", prev.commit)
	if prev.commit == git(t, "rev-parse", "HEAD") {
		t.Logf("WARNING: the previous release is this very commit (test/tools/previous/build.sh found no history in this clone): the upgrade rolls the same source")
	}
	r.apply(t, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\n", shared)+
		fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\n", tenant)+
		planeGateway(tenant, "gw", r.class, "name: "+tenant+"-tunnel", "a.example.com", "")+"---\n"+backend(tenant)+"---\n"+
		fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: %s}
spec:
  gatewayClassName: %s
  listeners: [{name: http, protocol: HTTP, port: 80, hostname: "s.example.com"}]
---
`, shared, r.class)+backend(shared))
	plane := provision.Name("gw", r.class)
	deployments := []struct{ ns, name string }{{r.ns, r.controller()}, {r.ns, r.proxy()}, {tenant, plane}}
	rolledTo := func(image string) {
		t.Helper()
		for _, d := range deployments {
			eventually(t, 2*time.Minute, d.name+" asking for "+image, func() error { return deploymentImage(ctx, r, d.ns, d.name, image) })
			waitRolledOut(t, r.kube, d.ns, d.name, 4*time.Minute)
			if err := podsRunImage(ctx, r, d.ns, d.name, image); err != nil {
				t.Fatal(err)
			}
		}
	}
	rolledTo(previousImage)

	visitor := r.edge.Client(10 * time.Second)
	hosts := []struct{ host, ns string }{{"s.example.com", shared}, {"a.example.com", tenant}}
	visit := func(i int) error {
		h := hosts[i%len(hosts)]
		return visitBackend(visitor, h.host, h.ns)
	}
	eventually(t, 90*time.Second, "both hostnames served by the previous release", func() error {
		return errors.Join(visit(0), visit(1))
	})
	checkConfigsApplied(t, r, tenant, plane)

	load := startLoadOf(4, 200_000, visit)
	defer load.stop()
	phase := func(what string, do func()) {
		t.Helper()
		before := load.counts()
		began := time.Now()
		do()
		time.Sleep(2 * time.Second) // and traffic through the Pods it left
		after := load.counts()
		sent, failed := after.sent-before.sent, after.failed-before.failed
		t.Logf("%s in %v: %d requests sent, %d failed", what, time.Since(began).Round(time.Second), sent, failed)
		if failed != 0 || sent < 200 {
			t.Fatalf("%s: %d of %d requests failed (want none of at least 200); first failures:\n%s", what, failed, sent, strings.Join(load.firstErrors(), "\n"))
		}
	}

	phase("upgrade", func() {
		// docs/install.md: the new CRDs first, server-side, then helm
		// upgrade with --reset-then-reuse-values. The image tag given at
		// install is a value it keeps, so the new one is set, as a user
		// who pinned a tag would.
		if err := r.env.Apply(ctx, crdStream(t, chartDir)); err != nil {
			t.Fatalf("the new CRDs: %v", err)
		}
		if _, err := r.helm(t, "upgrade", r.name, chartDir, "--namespace", r.ns, "--reset-then-reuse-values",
			"--set", "image.tag="+tunnelgateTag); err != nil {
			t.Fatal(err)
		}
		rolledTo(tunnelgateRepository + ":" + tunnelgateTag)
	})
	checkConfigsApplied(t, r, tenant, plane)

	phase("rollback", func() {
		// The CRDs stay at the new version: helm rollback leaves them, and
		// the previous controller reads them.
		if _, err := r.helm(t, "rollback", r.name, "1", "--namespace", r.ns); err != nil {
			t.Fatal(err)
		}
		rolledTo(previousImage)
	})
	checkConfigsApplied(t, r, tenant, plane)

	total := load.stop()
	t.Logf("in all: %d requests sent, %d failed", total.sent, total.failed)
	if total.failed != 0 {
		t.Fatalf("%d of %d requests failed; first failures:\n%s", total.failed, total.sent, strings.Join(load.firstErrors(), "\n"))
	}
}

// crdStream is the YAML stream of the CRDs in a chart directory's crds/.
func crdStream(t testing.TB, chart string) []byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chart, "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s/crds (%v)", chart, err)
	}
	var out []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, "\n---\n"...), b...)
	}
	return out
}

// crdIncompatibilities lists where the CRDs of next do not take what
// those of prev took: each CRD and each version prev served must still be
// served, each field of a version's schema still be there, and no field
// be required that was not (at a place prev's schema had). So objects
// written for the previous release stay valid after the upgrade, and the
// previous controller reads them after a rollback (fields it does not
// know it ignores).
func crdIncompatibilities(prev, next []byte) ([]string, error) {
	load := func(stream []byte) (map[string]map[string]any, error) {
		versions := map[string]map[string]any{} // "crd version" → openAPIV3Schema
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
		for {
			var crd struct {
				Metadata struct{ Name string }
				Spec     struct {
					Versions []struct {
						Name   string
						Served bool
						Schema struct {
							OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
						}
					}
				}
			}
			if err := dec.Decode(&crd); err == io.EOF {
				return versions, nil
			} else if err != nil {
				return nil, fmt.Errorf("reading CRDs: %w", err)
			}
			for _, v := range crd.Spec.Versions {
				if v.Served {
					versions[crd.Metadata.Name+" "+v.Name] = v.Schema.OpenAPIV3Schema
				}
			}
		}
	}
	old, err := load(prev)
	if err != nil {
		return nil, err
	}
	cur, err := load(next)
	if err != nil {
		return nil, err
	}
	if len(old) == 0 {
		return nil, fmt.Errorf("the previous CRDs serve no version")
	}
	var problems []string
	required := func(s map[string]any) []string {
		var out []string
		r, _ := s["required"].([]any)
		for _, x := range r {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	var walk func(at string, o, n map[string]any)
	walk = func(at string, o, n map[string]any) {
		for _, r := range required(n) {
			if !slices.Contains(required(o), r) {
				problems = append(problems, fmt.Sprintf("%s: %s is required now and was not: objects of the previous release may lack it", at, r))
			}
		}
		for _, key := range []string{"items", "additionalProperties"} {
			oi, _ := o[key].(map[string]any)
			ni, _ := n[key].(map[string]any)
			if oi != nil && ni == nil {
				problems = append(problems, fmt.Sprintf("%s: its %s schema is gone", at, key))
			} else if oi != nil {
				walk(at+"."+key, oi, ni)
			}
		}
		oprops, _ := o["properties"].(map[string]any)
		nprops, _ := n["properties"].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(oprops)) {
			nf, ok := nprops[name].(map[string]any)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: field %s is gone", at, name))
				continue
			}
			of, _ := oprops[name].(map[string]any)
			walk(at+"."+name, of, nf)
		}
	}
	for _, v := range slices.Sorted(maps.Keys(old)) {
		n, ok := cur[v]
		if !ok {
			problems = append(problems, fmt.Sprintf("CRD %s is no longer served", v))
			continue
		}
		walk(v, old[v], n)
	}
	return problems, nil
}

// crdIncompatibilities finds a field gone, a field newly required and a
// version no longer served, and nothing in the chart's CRDs against
// themselves.
func TestCRDIncompatibilitiesFound(t *testing.T) {
	crds := crdStream(t, chartDir)
	if problems, err := crdIncompatibilities(crds, crds); err != nil || len(problems) != 0 {
		t.Fatalf("the chart's CRDs against themselves: %v %v", problems, err)
	}
	const prev = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  versions:
  - name: v1
    served: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              a: {type: string}
              b: {type: array, items: {type: object, properties: {c: {type: string}}}}
  - name: v0
    served: true
    schema: {openAPIV3Schema: {type: object}}
`
	next := strings.NewReplacer("a: {type: string}", "z: {type: string}", "items: {type: object, properties:", "items: {type: object, required: [c], properties:",
		"name: v0\n    served: true", "name: v0\n    served: false").Replace(prev)
	problems, err := crdIncompatibilities([]byte(prev), []byte(next))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"things.example.com v0 is no longer served",
		"things.example.com v1.spec.b.items: c is required now",
		"things.example.com v1.spec: field a is gone",
	}
	if len(problems) != len(want) {
		t.Fatalf("problems %q, want %d: %q", problems, len(want), want)
	}
	for _, w := range want {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, w) }) {
			t.Errorf("problems %q: none says %q", problems, w)
		}
	}
}

// tunnelgateImages are the images of a Pod spec's containers (init
// containers too: the proxy is a native sidecar) that are the project's.
func tunnelgateImages(spec corev1.PodSpec) []string {
	var out []string
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		if strings.HasPrefix(c.Image, tunnelgateRepository+":") {
			out = append(out, c.Image)
		}
	}
	return out
}

// deploymentImage reports an error until the Deployment's template runs
// image in each of its project's containers.
func deploymentImage(ctx context.Context, r *rig, ns, name, image string) error {
	d, err := r.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return wantImage("Deployment "+ns+"/"+name, tunnelgateImages(d.Spec.Template.Spec), image)
}

// podsRunImage checks that every Pod of the Deployment runs image.
func podsRunImage(ctx context.Context, r *rig, ns, name, image string) error {
	d, err := r.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pods, err := podsOfDeployment(ctx, r, d)
	if err != nil {
		return err
	}
	for _, p := range pods {
		if err := wantImage("Pod "+ns+"/"+p.Name, tunnelgateImages(p.Spec), image); err != nil {
			return err
		}
	}
	return nil
}

func podsOfDeployment(ctx context.Context, r *rig, d *appsv1.Deployment) ([]corev1.Pod, error) {
	pods, err := r.kube.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
	if err != nil {
		return nil, err
	}
	if len(pods.Items) == 0 {
		return nil, fmt.Errorf("Deployment %s/%s has no Pods", d.Namespace, d.Name)
	}
	return pods.Items, nil
}

func wantImage(what string, images []string, image string) error {
	if len(images) == 0 || slices.ContainsFunc(images, func(i string) bool { return i != image }) {
		return fmt.Errorf("%s runs %v, want %s", what, images, image)
	}
	return nil
}

// checkConfigsApplied checks that every proxy, shared and of the plane in
// ns, serves the config version the controller serves for its token (the
// proxy's tunnelgate_config_info on its admin listener).
func checkConfigsApplied(t *testing.T, r *rig, ns, plane string) {
	t.Helper()
	ctx := t.Context()
	api := configAPI(t, r)
	for _, c := range []struct {
		ns, deployment, token string
	}{
		{r.ns, r.proxy(), secretKey(t, r.kube, r.ns, r.class+"-tunnelgate-internal", "config-token")},
		{ns, plane, secretKey(t, r.kube, ns, plane+"-credentials", provision.KeyConfigToken)},
	} {
		eventually(t, 60*time.Second, "the proxies of "+c.deployment+" serving the controller's config", func() error {
			want := api.read(t, c.token).Version
			d, err := r.kube.AppsV1().Deployments(c.ns).Get(ctx, c.deployment, metav1.GetOptions{})
			if err != nil {
				return err
			}
			pods, err := podsOfDeployment(ctx, r, d)
			if err != nil {
				return err
			}
			for _, p := range pods {
				got, err := configInfoVersion(ctx, "http://"+net.JoinHostPort(p.Status.PodIP, "9901")+"/metrics")
				if err != nil {
					return fmt.Errorf("%s: %w", p.Name, err)
				}
				if got != want {
					return fmt.Errorf("%s serves config %s; the controller serves %s", p.Name, got, want)
				}
			}
			return nil
		})
	}
}

var configInfoLine = regexp.MustCompile(`^tunnelgate_config_info\{(?:.*,)?version="([^"]+)"`)

// configInfoVersion is the version label of tunnelgate_config_info on a
// proxy's metrics page.
func configInfoVersion(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	c := &http.Client{Timeout: 5 * time.Second}
	res, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := configInfoLine.FindStringSubmatch(sc.Text()); m != nil {
			return m[1], nil
		}
	}
	return "", fmt.Errorf("%s serves no tunnelgate_config_info", url)
}
