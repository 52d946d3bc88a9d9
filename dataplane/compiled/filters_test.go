// This file tests filterKinds against proxycfg.Filter and the Gateway API.

package compiled

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// notServed are the Gateway API filter types the proxy does not run,
// each with why. translate fails a rule that has one closed (500) and
// says so on the route.
var notServed = map[string]string{
	"ExtensionRef": "it names a filter of an implementation's own, and tunnelgate defines none: " +
		"the route's ResolvedRefs is False (InvalidKind)",
	"ExternalAuth": "tunnelgate has no client for an external authorization service; Cloudflare Access " +
		"(AccessPolicy) is how it authenticates: the route's Accepted is False (UnsupportedValue)",
}

// Each settings field of proxycfg.Filter is one row of filterKinds, the
// row named as the field is, and that row alone claims a filter with it.
func TestFilterKindsCoverFilterFields(t *testing.T) {
	typ := reflect.TypeFor[proxycfg.Filter]()
	var fields []string
	for f := range typ.Fields() {
		if f.Name == "Type" {
			continue
		}
		fields = append(fields, f.Name)
		if f.Type.Kind() != reflect.Pointer {
			t.Errorf("Filter.%s is not a pointer: the table tells which field is set by nil", f.Name)
			continue
		}
		v := reflect.New(typ).Elem()
		v.FieldByIndex(f.Index).Set(reflect.New(f.Type.Elem()))
		filter := v.Addr().Interface().(*proxycfg.Filter)
		var claim []string
		for _, k := range filterKinds {
			if k.has(filter) {
				claim = append(claim, k.typ)
			}
		}
		if !slices.Equal(claim, []string{f.Name}) {
			t.Errorf("a filter with Filter.%s set is claimed by rows %q; want one row, %q", f.Name, claim, f.Name)
		}
		filter.Type = f.Name
		if _, err := checkFilter(filter); err != nil {
			t.Errorf("checkFilter refuses a filter of type %s: %v", f.Name, err)
		}
	}
	for _, k := range filterKinds {
		if !slices.Contains(fields, k.typ) {
			t.Errorf("row %s has no Filter field of its name", k.typ)
		}
	}
}

// Every filter type of the Gateway API's HTTPRoute and GRPCRoute is a row
// of filterKinds or is in notServed, and every row is a Gateway API
// HTTPRoute filter type: a Gateway API release with a new filter type
// fails here until tunnelgate runs it or says why not. The types are read
// from the source of the Gateway API module go.mod requires.
func TestFilterKindsCoverGatewayAPI(t *testing.T) {
	pkg, err := build.Import("sigs.k8s.io/gateway-api/apis/v1", ".", build.FindOnly)
	if err != nil {
		t.Fatalf("finding the Gateway API's source: %v", err)
	}
	apiTypes := filterTypes(t, pkg.Dir)
	if len(apiTypes["HTTPRouteFilterType"]) < 6 || len(apiTypes["GRPCRouteFilterType"]) < 3 {
		t.Fatalf("found too few filter types in %s: %v", pkg.Dir, apiTypes)
	}
	served := func(typ string) bool {
		return slices.ContainsFunc(filterKinds, func(k filterKind) bool { return k.typ == typ })
	}
	for kind, types := range apiTypes {
		for _, typ := range types {
			if _, no := notServed[typ]; !served(typ) && !no {
				t.Errorf("the Gateway API's %s %q is neither a row of filterKinds nor in notServed", kind, typ)
			}
			if _, no := notServed[typ]; served(typ) && no {
				t.Errorf("%q is both a row of filterKinds and in notServed", typ)
			}
		}
	}
	for typ := range notServed {
		if !slices.Contains(apiTypes["HTTPRouteFilterType"], typ) && !slices.Contains(apiTypes["GRPCRouteFilterType"], typ) {
			t.Errorf("notServed names %q, which the Gateway API does not", typ)
		}
	}
	for _, k := range filterKinds {
		if !slices.Contains(apiTypes["HTTPRouteFilterType"], k.typ) {
			t.Errorf("row %s is not a Gateway API HTTPRoute filter type", k.typ)
		}
	}
}

// filterTypes reads the string constants of types HTTPRouteFilterType and
// GRPCRouteFilterType declared in the Go files of dir.
func filterTypes(t *testing.T, dir string) map[string][]string {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				id, ok := vs.Type.(*ast.Ident)
				if !ok || id.Name != "HTTPRouteFilterType" && id.Name != "GRPCRouteFilterType" {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: a %s that is not a string literal", fset.Position(v.Pos()), id.Name)
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[id.Name] = append(out[id.Name], s)
				}
			}
		}
	}
	return out
}
