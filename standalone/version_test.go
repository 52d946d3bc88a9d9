package standalone

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// An object loaded without a resourceVersion gets one from its content,
// so translate's Cache tells it unchanged across loads: the same files
// give the same versions, an edited object a new one, and the others keep
// theirs. One that has a resourceVersion keeps it, unless the loader
// adds to it (a creation time).
func TestLoadContentVersions(t *testing.T) {
	const (
		class = "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: tunnelgate}\nspec: {controllerName: tunnelgate.dev/controller}\n"
		cm    = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: team}\ndata: {k: v}\n"
		dated = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, creationTimestamp: \"2026-01-01T00:00:00Z\"}\n"
		rv    = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, resourceVersion: \"42\", creationTimestamp: \"2026-01-01T00:00:00Z\"}\n"
	)
	load := func(docs ...string) map[string]string {
		t.Helper()
		snap, err := LoadBytes("objects.yaml", []byte(strings.Join(docs, "---\n")))
		if err != nil {
			t.Fatal(err)
		}
		return versions(snap)
	}
	first := load(class, cm, dated, rv)
	for name, v := range first {
		if name != "ConfigMap default/c" && !strings.HasPrefix(v, "sha256:") {
			t.Errorf("%s: resourceVersion %q, want a content hash", name, v)
		}
	}
	if v := first["ConfigMap default/c"]; v != "42" {
		t.Errorf("a resourceVersion given became %q", v)
	}
	if v := first["Namespace team"]; v == "" {
		t.Error("the namespace added for ConfigMap team/a has no resourceVersion")
	}
	if again := load(class, cm, dated, rv); !reflect.DeepEqual(again, first) {
		t.Errorf("the same documents loaded again: %v, then %v", first, again)
	}

	edited := load(class, strings.Replace(cm, "k: v", "k: w", 1), dated, rv)
	for name, v := range edited {
		if changed := v != first[name]; changed != (name == "ConfigMap team/a") {
			t.Errorf("ConfigMap team/a edited: %s went from %q to %q", name, first[name], v)
		}
	}

	// An object left without a creation time takes it from its place
	// (defaultMeta): moved, it has changed.
	moved := load(cm, class, dated, rv)
	for _, name := range []string{"GatewayClass tunnelgate", "ConfigMap team/a"} {
		if moved[name] == first[name] {
			t.Errorf("%s moved, and kept its resourceVersion %q", name, first[name])
		}
	}
	if moved["ConfigMap default/b"] != first["ConfigMap default/b"] {
		t.Error("ConfigMap default/b, which has a creation time, changed when others moved")
	}
}

// versions maps each object of a snapshot, as "Kind namespace/name", to
// its resourceVersion.
func versions(snap *translate.Snapshot) map[string]string {
	out := map[string]string{}
	v := reflect.ValueOf(snap).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Slice {
			continue
		}
		for j := range f.Len() {
			o, ok := f.Index(j).Interface().(metav1.Object)
			if !ok {
				continue
			}
			kind := f.Index(j).Elem().Type().Name()
			out[objectName(kind, o.GetNamespace(), o.GetName())] = o.GetResourceVersion()
		}
	}
	return out
}
