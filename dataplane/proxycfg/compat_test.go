// This file holds the config's wire format to what a proxy one release
// older reads.

package proxycfg

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// requiredFields are the fields of the config's JSON (Config and Delta,
// and every type of this package inside them, as Type.jsonName) that are
// written even when zero: those of the wire format a proxy of any
// release reads. The list may only shrink. A field added to the format
// must be optional (omitempty, or omitzero for a struct) with its zero
// meaning what proxies did before it: a controller then writes it only
// for a config that uses the new setting, and a proxy one release older
// (which refuses a field it does not know) reads every other config. See
// docs/install.md, "Upgrade".
var requiredFields = []string{
	"Access.audiences", "Access.team",
	"AccessTeam.domain", "AccessTeam.keys",
	"BackendRef.weight",
	"CORS.maxAge",
	"Certificate.cert", "Certificate.key",
	"ClientValidation.caCertificates",
	"Cluster.endpoints", "Cluster.name", "Cluster.protocol",
	"Config.clusters", "Config.listeners", "Config.routes", "Config.schema", "Config.version",
	"Delta.base", "Delta.clusters", "Delta.listeners", "Delta.routes", "Delta.schema", "Delta.version",
	"Endpoint.address",
	"Filter.type",
	"Fraction.denominator", "Fraction.numerator",
	"Header.name", "Header.value",
	"HealthCheck.header", "HealthCheck.path", "HealthCheck.token",
	"Listener.name", "Listener.protocol",
	"Match.path",
	"Mirror.cluster",
	"PathMatch.type", "PathMatch.value",
	"PathModifier.type",
	"Redirect.statusCode",
	"Retry.attempts",
	"Route.created", "Route.kind", "Route.listeners", "Route.name", "Route.namespace", "Route.rules",
	"Rule.matches",
	"SessionPersistence.lifetime", "SessionPersistence.name", "SessionPersistence.type",
	"TLSSettings.sni",
	"ValueMatch.name", "ValueMatch.type", "ValueMatch.value",
}

// A new field of the config is optional, so that a proxy one release
// older than its controller reads every config that does not use it.
func TestNewFieldsAreOptional(t *testing.T) {
	var required []string
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map || typ.Kind() == reflect.Array {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ.PkgPath() != reflect.TypeFor[Config]().PkgPath() || seen[typ] {
			return
		}
		seen[typ] = true
		if typ.Implements(reflect.TypeFor[json.Marshaler]()) {
			return
		}
		for f := range typ.Fields() {
			tag := f.Tag.Get("json")
			if !f.IsExported() || tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if name == "" {
				name = f.Name
			}
			ft := f.Type
			optional := strings.Contains(","+opts+",", ",omitzero,") ||
				strings.Contains(","+opts+",", ",omitempty,") && ft.Kind() != reflect.Struct
			if !optional {
				required = append(required, typ.Name()+"."+name)
			}
			walk(ft)
		}
	}
	walk(reflect.TypeFor[Config]())
	walk(reflect.TypeFor[Delta]())
	for _, f := range required {
		if !slices.Contains(requiredFields, f) {
			t.Errorf("%s is written even when zero: a proxy one release older would refuse every config (make it omitempty, or omitzero for a struct, its zero meaning what proxies did before it)", f)
		}
	}
	for _, f := range requiredFields {
		if !slices.Contains(required, f) {
			t.Errorf("%s is in requiredFields but no longer a field written when zero: take it out of the list", f)
		}
	}
}
