package crd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/tunnelgate/tunnelgate/api/v1alpha1"
	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
)

// crdDoc is the part of a CRD these tests read.
type crdDoc struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind   string `json:"kind"`
			Plural string `json:"plural"`
		} `json:"names"`
		Scope    string `json:"scope"`
		Versions []struct {
			Name         string         `json:"name"`
			Served       bool           `json:"served"`
			Storage      bool           `json:"storage"`
			Subresources map[string]any `json:"subresources"`
			Schema       struct {
				OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

func loadCRDs(t *testing.T) map[string]crdDoc {
	t.Helper()
	out := map[string]crdDoc{}
	for doc := range bytes.SplitSeq(YAML(), []byte("\n---\n")) {
		doc = bytes.TrimPrefix(doc, []byte("---\n"))
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var c crdDoc
		if err := yaml.Unmarshal(doc, &c); err != nil {
			t.Fatalf("parse CRD: %v", err)
		}
		if c.Kind != "CustomResourceDefinition" {
			t.Fatalf("document of kind %q in the CRD files", c.Kind)
		}
		out[c.Spec.Names.Kind] = c
	}
	return out
}

func TestCRDsMatchGoTypes(t *testing.T) {
	crds := loadCRDs(t)
	for _, tc := range []struct {
		obj        any
		kind       string
		plural     string
		scope      string
		subresouce bool
	}{
		{v1alpha1.GatewayClassConfig{}, v1alpha1.KindGatewayClassConfig, "gatewayclassconfigs", "Cluster", false},
		{v1alpha1.GatewayConfig{}, v1alpha1.KindGatewayConfig, "gatewayconfigs", "Namespaced", false},
		{v1alpha1.ExternalBackend{}, v1alpha1.KindExternalBackend, "externalbackends", "Namespaced", true},
		{v1alpha1.AccessPolicy{}, v1alpha1.KindAccessPolicy, "accesspolicies", "Namespaced", true},
		{v1alpha1.LoadBalancingPolicy{}, v1alpha1.KindLoadBalancingPolicy, "loadbalancingpolicies", "Namespaced", true},
		{v1alpha1.DNSPolicy{}, v1alpha1.KindDNSPolicy, "dnspolicies", "Namespaced", true},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			c, ok := crds[tc.kind]
			if !ok {
				t.Fatalf("no CRD for kind %s", tc.kind)
			}
			if c.Spec.Group != v1alpha1.Group || c.Spec.Names.Plural != tc.plural ||
				c.Metadata.Name != tc.plural+"."+v1alpha1.Group || c.Spec.Scope != tc.scope {
				t.Errorf("names: got %s group %s plural %s scope %s", c.Metadata.Name, c.Spec.Group, c.Spec.Names.Plural, c.Spec.Scope)
			}
			if len(c.Spec.Versions) != 1 || c.Spec.Versions[0].Name != v1alpha1.Version ||
				!c.Spec.Versions[0].Served || !c.Spec.Versions[0].Storage {
				t.Fatalf("want exactly one served storage version %s", v1alpha1.Version)
			}
			v := c.Spec.Versions[0]
			_, hasStatus := reflect.TypeOf(tc.obj).FieldByName("Status")
			if _, sub := v.Subresources["status"]; sub != hasStatus {
				t.Errorf("status subresource %v, but the Go type has a Status field: %v", sub, hasStatus)
			}
			compareSchema(t, tc.kind, reflect.TypeOf(tc.obj), v.Schema.OpenAPIV3Schema)
		})
	}
}

func TestExternalBackendProtocolEnum(t *testing.T) {
	s := crdSchema(t, v1alpha1.KindExternalBackend)
	proto := dig(t, s, "spec", "protocol")
	var got []string
	for _, e := range proto["enum"].([]any) {
		got = append(got, e.(string))
	}
	want := []string{v1alpha1.ProtocolHTTP, v1alpha1.ProtocolH2C, v1alpha1.ProtocolHTTPS}
	if !slices.Equal(got, want) {
		t.Errorf("protocol enum %v, want %v", got, want)
	}
	if proto["default"] != v1alpha1.ProtocolHTTP {
		t.Errorf("protocol default %v, want %s", proto["default"], v1alpha1.ProtocolHTTP)
	}
}

// TestDefaults checks the defaults the Go comments promise.
func TestDefaults(t *testing.T) {
	s := crdSchema(t, v1alpha1.KindGatewayClassConfig)
	for _, tc := range []struct {
		path []string
		want any
	}{
		{[]string{"spec", "credentialsRef", "key"}, "token"},
		{[]string{"spec", "dns", "proxied"}, true},
		{[]string{"spec", "dns", "enabled"}, false},
		{[]string{"spec", "dns", "takeover"}, false},
		{[]string{"spec", "origin", "port"}, float64(8080)},
		{[]string{"spec", "origin", "tlsPort"}, float64(8443)},
	} {
		if got := dig(t, s, tc.path...)["default"]; got != tc.want {
			t.Errorf("%s: default %v, want %v", strings.Join(tc.path, "."), got, tc.want)
		}
	}
}

// TestLoadBalancingPolicySchema checks the defaults and enums the Go
// side promises.
func TestLoadBalancingPolicySchema(t *testing.T) {
	s := crdSchema(t, v1alpha1.KindLoadBalancingPolicy)
	for _, tc := range []struct {
		path []string
		want any
	}{
		{[]string{"spec", "weight"}, float64(v1alpha1.DefaultLBWeight)},
		{[]string{"spec", "enabled"}, true},
		{[]string{"spec", "steering"}, string(v1alpha1.DefaultLBSteering)},
		{[]string{"spec", "sessionAffinity", "type"}, string(v1alpha1.DefaultLBAffinity)},
		{[]string{"spec", "healthCheck", "retries"}, float64(v1alpha1.DefaultLBRetries)},
		{[]string{"spec", "healthCheck", "expectedCodes"}, v1alpha1.DefaultLBExpectedCodes},
	} {
		if got := dig(t, s, tc.path...)["default"]; got != tc.want {
			t.Errorf("%s: default %v, want %v", strings.Join(tc.path, "."), got, tc.want)
		}
	}
	var steering []string
	for _, e := range dig(t, s, "spec", "steering")["enum"].([]any) {
		steering = append(steering, e.(string))
	}
	want := []string{string(v1alpha1.SteeringOff), string(v1alpha1.SteeringRandom), string(v1alpha1.SteeringGeo),
		string(v1alpha1.SteeringDynamicLatency), string(v1alpha1.SteeringProximity),
		string(v1alpha1.SteeringLeastOutstandingRequests), string(v1alpha1.SteeringLeastConnections)}
	if !slices.Equal(steering, want) {
		t.Errorf("steering enum %v, want %v", steering, want)
	}
	pool := dig(t, s, "spec", "pool")["pattern"]
	if pool != "^[A-Za-z0-9_-]+$" {
		t.Errorf("pool pattern %v", pool)
	}
}

// TestDNSPolicySchema checks the records enum and default the Go side
// promises.
func TestDNSPolicySchema(t *testing.T) {
	records := dig(t, crdSchema(t, v1alpha1.KindDNSPolicy), "spec", "records")
	var got []string
	for _, e := range records["enum"].([]any) {
		got = append(got, e.(string))
	}
	if want := []string{string(v1alpha1.DNSRecordsManaged), string(v1alpha1.DNSRecordsUnmanaged)}; !slices.Equal(got, want) {
		t.Errorf("records enum %v, want %v", got, want)
	}
	if records["default"] != string(v1alpha1.DefaultDNSRecords) {
		t.Errorf("records default %v, want %s", records["default"], v1alpha1.DefaultDNSRecords)
	}
}

// TestGatewayConfigSchema checks what the CRD says and the Go side relies
// on: defaults, the replica bound, and the proxyArgs rule, which must
// allow exactly v1alpha1.AllowedProxyFlags.
func TestGatewayConfigSchema(t *testing.T) {
	s := crdSchema(t, v1alpha1.KindGatewayConfig)
	for _, tc := range []struct {
		path []string
		key  string
		want any
	}{
		{[]string{"spec", "dataPlane"}, "default", v1alpha1.DataPlaneShared},
		{[]string{"spec", "autoscaling", "targetCPUUtilizationPercentage"}, "default", float64(v1alpha1.DefaultTargetCPUUtilizationPercentage)},
		{[]string{"spec", "tunnel", "tokenSecretRef", "key"}, "default", "token"},
		{[]string{"spec", "tunnel", "deleteWithGateway"}, "default", false},
		{[]string{"spec", "replicas"}, "maximum", float64(v1alpha1.MaxConnectorsPerTunnel)},
		{[]string{"spec", "autoscaling", "maxReplicas"}, "maximum", float64(v1alpha1.MaxConnectorsPerTunnel)},
	} {
		if got := dig(t, s, tc.path...)[tc.key]; got != tc.want {
			t.Errorf("%s: %s %v, want %v", strings.Join(tc.path, "."), tc.key, got, tc.want)
		}
	}
	var modes []string
	for _, e := range dig(t, s, "spec", "dataPlane")["enum"].([]any) {
		modes = append(modes, e.(string))
	}
	if want := []string{v1alpha1.DataPlaneShared, v1alpha1.DataPlaneDedicated}; !slices.Equal(modes, want) {
		t.Errorf("dataPlane enum %v, want %v", modes, want)
	}
	rules := asSlice(dig(t, s, "spec", "proxyArgs")["x-kubernetes-validations"])
	if len(rules) != 1 {
		t.Fatalf("proxyArgs has %d rules, want the allow-list", len(rules))
	}
	want := "self.all(a, a.matches('^-(" + strings.Join(v1alpha1.AllowedProxyFlags, "|") + ")=.*$'))"
	if got := rules[0].(map[string]any)["rule"]; got != want {
		t.Errorf("proxyArgs rule\n %v\nwant\n %s", got, want)
	}
}

// TestAccessPolicyTeamDomain: the API server takes the team domains the
// controller will fetch keys from, and no others.
func TestAccessPolicyTeamDomain(t *testing.T) {
	s := crdSchema(t, v1alpha1.KindAccessPolicy)
	if got := dig(t, s, "spec", "teamDomain")["pattern"]; got != cfaccess.TeamDomainPattern {
		t.Errorf("teamDomain pattern %v, want cfaccess.TeamDomainPattern %s", got, cfaccess.TeamDomainPattern)
	}
}

func crdSchema(t *testing.T, kind string) map[string]any {
	t.Helper()
	c, ok := loadCRDs(t)[kind]
	if !ok {
		t.Fatalf("no CRD for kind %s", kind)
	}
	return c.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// dig follows properties down a schema.
func dig(t *testing.T, s map[string]any, path ...string) map[string]any {
	t.Helper()
	for _, p := range path {
		props, _ := s["properties"].(map[string]any)
		next, ok := props[p].(map[string]any)
		if !ok {
			t.Fatalf("schema has no property %s", strings.Join(path, "."))
		}
		s = next
	}
	return s
}

var (
	typeTime       = reflect.TypeOf(metav1.Time{})
	typeObjectMeta = reflect.TypeOf(metav1.ObjectMeta{})
	typeQuantity   = reflect.TypeOf(resource.Quantity{})
)

// compareSchema walks a Go type and its schema together: same property
// names, same types, every field without omitempty required.
func compareSchema(t *testing.T, path string, typ reflect.Type, s map[string]any) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	want := map[reflect.Kind]string{
		reflect.String: "string", reflect.Bool: "boolean",
		reflect.Int32: "integer", reflect.Int64: "integer",
		reflect.Slice: "array", reflect.Struct: "object", reflect.Map: "object",
	}
	switch {
	case typ == typeTime:
		if s["type"] != "string" || s["format"] != "date-time" {
			t.Errorf("%s: want a date-time string, got type %v format %v", path, s["type"], s["format"])
		}
		return
	case typ == typeObjectMeta:
		if s["type"] != "object" {
			t.Errorf("%s: want type object", path)
		}
		return
	case typ == typeQuantity:
		if s["x-kubernetes-int-or-string"] != true || s["pattern"] == nil {
			t.Errorf("%s: a quantity wants x-kubernetes-int-or-string and a pattern", path)
		}
		return
	}
	if w, ok := want[typ.Kind()]; !ok {
		t.Fatalf("%s: Go kind %s has no schema mapping in this test", path, typ.Kind())
	} else if s["type"] != w {
		t.Errorf("%s: schema type %v, Go type %s wants %s", path, s["type"], typ, w)
	}
	switch typ.Kind() {
	case reflect.Int32, reflect.Int64:
		if f := "int" + strings.TrimPrefix(typ.Kind().String(), "int"); s["format"] != f {
			t.Errorf("%s: format %v, want %s", path, s["format"], f)
		}
	case reflect.Slice:
		items, _ := s["items"].(map[string]any)
		compareSchema(t, path+"[]", typ.Elem(), items)
	case reflect.Map:
		if typ.Key().Kind() != reflect.String {
			t.Fatalf("%s: map keys must be strings", path)
		}
		values, _ := s["additionalProperties"].(map[string]any)
		compareSchema(t, path+"{}", typ.Elem(), values)
	case reflect.Struct:
		props, _ := s["properties"].(map[string]any)
		var required []string
		for _, r := range asSlice(s["required"]) {
			required = append(required, r.(string))
		}
		fields := jsonFields(typ)
		for name, f := range fields {
			sub, ok := props[name].(map[string]any)
			if !ok {
				t.Errorf("%s.%s: in the Go type, not in the schema", path, name)
				continue
			}
			if !f.omitempty && !slices.Contains(required, name) {
				t.Errorf("%s.%s: has no omitempty, so the schema must require it", path, name)
			}
			compareSchema(t, path+"."+name, f.typ, sub)
		}
		for name := range props {
			if _, ok := fields[name]; !ok {
				t.Errorf("%s.%s: in the schema, not in the Go type", path, name)
			}
		}
		for _, r := range required {
			if _, ok := fields[r]; !ok {
				t.Errorf("%s: requires %s, which the Go type lacks", path, r)
			}
		}
	}
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

type jsonField struct {
	typ       reflect.Type
	omitempty bool
}

// jsonFields lists a struct's fields by JSON name, flattening inline ones.
func jsonFields(typ reflect.Type) map[string]jsonField {
	out := map[string]jsonField{}
	for f := range typ.Fields() {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for n, sub := range jsonFields(f.Type) {
				out[n] = sub
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = jsonField{typ: f.Type, omitempty: strings.Contains(opts, "omitempty")}
	}
	return out
}

// config/crd/gateway-api holds the Gateway API CRDs of the module version
// go.mod requires, byte for byte: the module cache has them once the
// module is downloaded, as building this test did.
func TestGatewayAPICRDsAreTheModules(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	version, dir, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	readme, err := os.ReadFile("gateway-api/README.md")
	if err != nil || !strings.Contains(string(readme), "# Gateway API CRDs, "+version+"\n") {
		t.Errorf("gateway-api/README.md does not name %s, the version go.mod requires", version)
	}
	for _, channel := range []string{"standard", "experimental"} {
		want, err := filepath.Glob(filepath.Join(dir, "config", "crd", channel, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, w := range want {
			name := filepath.Base(w)
			if name == "kustomization.yaml" {
				continue
			}
			n++
			wb, err := os.ReadFile(w)
			if err != nil {
				t.Fatal(err)
			}
			if gb, err := os.ReadFile(filepath.Join("gateway-api", channel, name)); err != nil || !bytes.Equal(gb, wb) {
				t.Errorf("gateway-api/%s/%s differs from %s's: copy %s/config/crd/%s/*.yaml (but kustomization.yaml) here", channel, name, version, dir, channel)
			}
		}
		have, _ := filepath.Glob(filepath.Join("gateway-api", channel, "*.yaml"))
		if len(have) != n || n == 0 {
			t.Errorf("gateway-api/%s has %d files, the module's %s channel %d", channel, len(have), channel, n)
		}
	}
}
