// This file implements the tests of the file set: reloads that parse only what changed.

package standalone

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

func routeYAML(name string) string {
	return "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: " + name + "}\nspec:\n  parentRefs: [{name: gw}]\n"
}

// A reload hands on the objects of unchanged files as the same objects,
// parses the changed ones anew, and gives what a cold Load gives.
func TestFileSetReusesUnchangedFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.yaml", routeYAML("b1")+"---\n"+routeYAML("b2"))
	write("c.yaml", routeYAML("c1"))
	var s fileSet
	load := func() map[string]object {
		t.Helper()
		snap, err := s.load([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		cold, err := Load([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		if len(cold.HTTPRoutes) != len(snap.HTTPRoutes) {
			t.Fatalf("%d routes, a cold load has %d", len(snap.HTTPRoutes), len(cold.HTTPRoutes))
		}
		// The same routes, in the same order of age, as a cold load,
		// though not at the same times: a reload keeps times (see
		// files.go).
		byName := map[string]object{}
		for i, r := range snap.HTTPRoutes {
			c := cold.HTTPRoutes[i]
			if r.Name != c.Name || r.UID != c.UID {
				t.Errorf("route %d: %s, a cold load has %s", i, r.Name, c.Name)
			}
			if i > 0 {
				if before := snap.HTTPRoutes[i-1]; !before.CreationTimestamp.Before(&r.CreationTimestamp) {
					t.Errorf("route %s created %v, not after the route before it, %s, created %v", r.Name, r.CreationTimestamp, before.Name, before.CreationTimestamp)
				}
			}
			byName[r.Name] = r
		}
		for _, ns := range snap.Namespaces {
			byName["ns/"+ns.Name] = ns
		}
		return byName
	}
	first := load()
	same := func(what string, a, b map[string]object, names ...string) {
		t.Helper()
		for _, n := range names {
			if a[n] != b[n] {
				t.Errorf("%s: %s is a new object", what, n)
			}
		}
	}
	fresh := func(what string, a, b map[string]object, names ...string) {
		t.Helper()
		for _, n := range names {
			if a[n] == b[n] {
				t.Errorf("%s: %s is the same object", what, n)
			}
		}
	}

	second := load()
	same("nothing changed", first, second, "b1", "b2", "c1", "ns/default")

	// In a file that changed, the documents that did not keep their
	// objects too.
	write("c.yaml", routeYAML("c1")+"---\n"+routeYAML("c2"))
	third := load()
	same("a route added to c.yaml", second, third, "b1", "b2", "c1", "ns/default")

	write("c.yaml", routeYAML("c1")+"---\n"+routeYAML("c3")+"---\n"+routeYAML("c2"))
	edited := load()
	same("a route inserted in c.yaml", third, edited, "b1", "b2", "c1", "ns/default")
	fresh("a route inserted in c.yaml (c2 created a second later)", third, edited, "c2")

	write("b.yaml", routeYAML("b1"))
	fourth := load()
	same("a route removed from b.yaml", edited, fourth, "b1", "c1", "c2", "c3", "ns/default")

	// A route removed from the top of a file moves none after it; one
	// inserted in the gap it left moves none either. (Each document
	// follows a "---", so that the first is the same document as when
	// it came second.)
	write("c.yaml", "---\n"+routeYAML("c1")+"---\n"+routeYAML("c3")+"---\n"+routeYAML("c2"))
	fourth = load()
	write("c.yaml", "---\n"+routeYAML("c3")+"---\n"+routeYAML("c2"))
	top := load()
	same("the first route of c.yaml removed", fourth, top, "b1", "c2", "c3", "ns/default")
	write("c.yaml", "---\n"+routeYAML("c0")+"---\n"+routeYAML("c3")+"---\n"+routeYAML("c2"))
	gap := load()
	same("a route inserted where one was removed", top, gap, "b1", "c2", "c3", "ns/default")
	write("c.yaml", "---\n"+routeYAML("c4")+"---\n"+routeYAML("c0")+"---\n"+routeYAML("c3")+"---\n"+routeYAML("c2"))
	moved := load()
	fresh("a route inserted first, where no gap is (c0, c3 and c2 created a second later)", gap, moved, "c0", "c3", "c2")
	write("c.yaml", routeYAML("c1")+"---\n"+routeYAML("c3")+"---\n"+routeYAML("c2"))
	fourth = load()

	// A file before the others: theirs move, and are copied.
	write("a.yaml", routeYAML("a1"))
	fifth := load()
	fresh("a file added first", fourth, fifth, "b1", "c1", "c2", "ns/default")
}

// Objects found twice are errors, across files, in file order, whether
// the files were parsed in this load or the last.
func TestFileSetDuplicates(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", routeYAML("one"))
	write("b.yaml", routeYAML("two"))
	var s fileSet
	if _, err := s.load([]string{dir}); err != nil {
		t.Fatal(err)
	}
	write("b.yaml", "bogus: [\n---\n"+routeYAML("one"))
	_, err := s.load([]string{dir})
	want := []string{
		filepath.Join(dir, "b.yaml") + ":1: invalid YAML",
		filepath.Join(dir, "b.yaml") + ":2 (HTTPRoute default/one): duplicate of the object at " + filepath.Join(dir, "a.yaml") + ":1",
	}
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("errors:\n%v\nwant %d", err, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("error %d = %q, want it to start %q", i, lines[i], w)
		}
	}
	// Unchanged files, the same errors.
	if _, again := s.load([]string{dir}); again == nil || again.Error() != err.Error() {
		t.Errorf("again: %v", again)
	}
	write("b.yaml", routeYAML("two"))
	if _, err := s.load([]string{dir}); err != nil {
		t.Errorf("fixed: %v", err)
	}
}

// Serve's builder keeps statuses on the objects as an API server would:
// an edited route keeps its conditions' transition times, and its
// reload translates that route alone, reusing the others.
func TestBuilderKeepsStatuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("gateway.yaml", serveGateway)
	write("backends.yaml", serveBackends(map[string]int{"one": 8081, "two": 8082}))
	routes := func(edited string) string {
		var b strings.Builder
		for i := range 10 {
			backend := "one"
			if fmt.Sprint(i) == edited {
				backend = "two"
			}
			fmt.Fprintf(&b, "---\n%s", hostRoute(fmt.Sprintf("r%d", i), fmt.Sprintf("r%d.example.com", i), backend))
		}
		return b.String()
	}
	write("routes.yaml", routes(""))
	b := &builder{paths: []string{dir}, listen: "127.0.0.1:80", cache: translate.NewCache()}
	build := func(now time.Time) *translate.Output {
		t.Helper()
		res, err := b.build(now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.settle(res.Output, now); err != nil {
			t.Fatal(err)
		}
		return res.Output
	}
	accepted := func(out *translate.Output, name string) metav1.Time {
		t.Helper()
		st := out.HTTPRoutes[types.NamespacedName{Namespace: "default", Name: name}]
		if len(st) != 1 {
			t.Fatalf("route %s: %d parent statuses", name, len(st))
		}
		for _, c := range st[0].Conditions {
			if c.Type == "Accepted" && c.Status == metav1.ConditionTrue {
				return c.LastTransitionTime
			}
		}
		t.Fatalf("route %s not accepted: %+v", name, st[0].Conditions)
		return metav1.Time{}
	}
	start := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	first := build(start)
	write("routes.yaml", routes("3"))
	later := build(start.Add(time.Hour))
	if got, want := accepted(later, "r3"), accepted(first, "r3"); !got.Equal(&want) {
		t.Errorf("the edited route's Accepted moved from %v to %v", want, got)
	}
	if reused, translated := b.cache.Stats(); translated != 1 || reused != 9 {
		t.Errorf("the edit translated %d routes and reused %d, want 1 and 9", translated, reused)
	}
}
