package proxycfg

import (
	"reflect"
	"testing"
	"time"
)

// Every struct type reachable from Config must have an Equal that looks
// at every one of its fields, all the way down: a comparison that misses
// a field makes the config server publish stale JSON. For each type this
// builds a value with every field set, requires it Equal to a deep copy
// of itself (so no comparison is by address), and unequal to each value
// that differs from it in one place only, at any depth, as those are to
// one another (which sets a nil slice against an empty one). A field or type
// added without its comparison fails here; a field of a kind the test
// cannot vary (a map, say) fails too, until the test learns it.
func TestEqualComparesEveryField(t *testing.T) {
	for _, typ := range wireTypes(reflect.TypeFor[Config]()) {
		t.Run(typ.Name(), func(t *testing.T) {
			equal := equalMethod(t, typ)
			x := full(typ)
			if !equal(x, x) || !equal(x, deepCopy(x)) {
				t.Fatalf("a %s is not Equal to a copy of itself", typ)
			}
			none := reflect.Zero(reflect.PointerTo(typ))
			if !equal(none, none) || equal(x.Addr(), none) || equal(none, x.Addr()) {
				t.Fatalf("(*%s).Equal does not tell nil from a value", typ)
			}
			vs := append([]variant{{typ.Name(), x}}, variants(t, typ.Name(), x)...)
			for i, a := range vs {
				for _, b := range vs[i+1:] {
					if equal(a.value, b.value) || equal(b.value, a.value) {
						t.Errorf("%s and %s are Equal", a.path, b.path)
					}
				}
			}
		})
	}
}

// JSON writes an instant and its offset, not the location's name.
func TestEqualTimesAsJSONWritesThem(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, tc := range []struct {
		name  string
		b     time.Time
		equal bool
	}{
		{"the same", at, true},
		{"another location at the same offset", at.In(time.FixedZone("Z0", 0)), true},
		{"another offset", at.In(time.FixedZone("CET", 3600)), false},
		{"another instant", at.Add(time.Nanosecond), false},
	} {
		a, b := Route{Kind: KindHTTP, Created: at}, Route{Kind: KindHTTP, Created: tc.b}
		if a.Equal(&b) != tc.equal {
			t.Errorf("%s: Equal is %v", tc.name, !tc.equal)
		}
	}
}

// wireTypes lists the struct types reachable from typ, typ first.
// time.Time is a value of its own, compared as JSON writes it.
func wireTypes(typ reflect.Type) []reflect.Type {
	var out []reflect.Type
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice:
			walk(t.Elem())
		case reflect.Struct:
			if t == reflect.TypeFor[time.Time]() || seen[t] {
				return
			}
			seen[t] = true
			out = append(out, t)
			for f := range t.Fields() {
				walk(f.Type)
			}
		}
	}
	walk(typ)
	return out
}

// equalMethod returns (*typ).Equal, called on addressable values or
// pointers to typ.
func equalMethod(t *testing.T, typ reflect.Type) func(a, b reflect.Value) bool {
	m, ok := reflect.PointerTo(typ).MethodByName("Equal")
	want := reflect.FuncOf([]reflect.Type{reflect.PointerTo(typ), reflect.PointerTo(typ)}, []reflect.Type{reflect.TypeFor[bool]()}, false)
	if !ok || m.Type != want {
		t.Fatalf("%s has no method Equal(*%[1]s) bool on its pointer", typ)
	}
	ptr := func(v reflect.Value) reflect.Value {
		if v.Kind() == reflect.Pointer {
			return v
		}
		return v.Addr()
	}
	return func(a, b reflect.Value) bool {
		return m.Func.Call([]reflect.Value{ptr(a), ptr(b)})[0].Bool()
	}
}

var someTime = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

// full returns an addressable value of typ with every field set: strings
// and numbers not zero, slices of one full element, pointers to full
// values.
func full(typ reflect.Type) reflect.Value {
	v := reflect.New(typ).Elem()
	switch {
	case typ == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(someTime))
	case typ.Kind() == reflect.String:
		v.SetString("s")
	case typ.Kind() == reflect.Int, typ.Kind() == reflect.Int64:
		v.SetInt(1)
	case typ.Kind() == reflect.Uint8:
		v.SetUint(1)
	case typ.Kind() == reflect.Bool:
		v.SetBool(true)
	case typ.Kind() == reflect.Slice:
		v.Set(reflect.Append(reflect.MakeSlice(typ, 0, 1), full(typ.Elem())))
	case typ.Kind() == reflect.Pointer:
		v.Set(full(typ.Elem()).Addr())
	case typ.Kind() == reflect.Struct:
		for i := range typ.NumField() {
			v.Field(i).Set(full(typ.Field(i).Type))
		}
	}
	return v
}

// deepCopy copies v, sharing no memory with it.
func deepCopy(v reflect.Value) reflect.Value {
	c := reflect.New(v.Type()).Elem()
	switch v.Kind() {
	case reflect.Slice:
		if v.IsNil() {
			return c
		}
		c.Set(reflect.MakeSlice(v.Type(), v.Len(), v.Len()))
		for i := range v.Len() {
			c.Index(i).Set(deepCopy(v.Index(i)))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			c.Set(deepCopy(v.Elem()).Addr())
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			c.Set(v)
			break
		}
		for i := range v.NumField() {
			c.Field(i).Set(deepCopy(v.Field(i)))
		}
	default:
		c.Set(v)
	}
	return c
}

// variant is a value that differs from another at path only.
type variant struct {
	path  string
	value reflect.Value
}

// variants returns values that each differ from v in one place: a
// scalar changed, a slice or pointer nil, empty, longer or with its
// element changed, a time moved or at another offset. Each is new
// memory on the way to the change, so no Equal can take it for v by its
// address.
func variants(t *testing.T, path string, v reflect.Value) []variant {
	t.Helper()
	at := func(p string, x reflect.Value) variant { return variant{path + p, x} }
	with := func(f func(reflect.Value)) reflect.Value {
		c := deepCopy(v)
		f(c)
		return c
	}
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		tm := v.Interface().(time.Time)
		return []variant{
			at("+1ns", reflect.ValueOf(tm.Add(time.Nanosecond))),
			at("@+01:00", reflect.ValueOf(tm.In(time.FixedZone("", 3600)))),
		}
	case v.Kind() == reflect.String:
		return []variant{at("", with(func(c reflect.Value) { c.SetString(c.String() + "x") }))}
	case v.CanInt():
		return []variant{at("", with(func(c reflect.Value) { c.SetInt(c.Int() + 1) }))}
	case v.CanUint():
		return []variant{at("", with(func(c reflect.Value) { c.SetUint(c.Uint() + 1) }))}
	case v.Kind() == reflect.Bool:
		return []variant{at("", with(func(c reflect.Value) { c.SetBool(!c.Bool()) }))}
	case v.Kind() == reflect.Slice:
		out := []variant{
			at("=nil", reflect.Zero(v.Type())),
			at("=[]", reflect.MakeSlice(v.Type(), 0, 0)),
			at("+1", reflect.Append(deepCopy(v), full(v.Type().Elem()))),
		}
		for _, e := range variants(t, "", v.Index(0)) {
			out = append(out, at("[0]"+e.path, with(func(c reflect.Value) { c.Index(0).Set(e.value) })))
		}
		return out
	case v.Kind() == reflect.Pointer:
		out := []variant{at("=nil", reflect.Zero(v.Type()))}
		for _, e := range variants(t, "", v.Elem()) {
			p := reflect.New(v.Type().Elem())
			p.Elem().Set(e.value)
			out = append(out, at(e.path, p))
		}
		return out
	case v.Kind() == reflect.Struct:
		var out []variant
		for i := range v.NumField() {
			for _, e := range variants(t, "", v.Field(i)) {
				out = append(out, at("."+v.Type().Field(i).Name+e.path, with(func(c reflect.Value) { c.Field(i).Set(e.value) })))
			}
		}
		return out
	}
	t.Fatalf("%s: the test cannot vary a %s; teach variants", path, v.Type())
	return nil
}

func TestEqualRoutingLeavesOutVersionAndClusterDefinitions(t *testing.T) {
	base := func() *Config {
		return &Config{Schema: SchemaVersion, Version: "v1",
			Routes:   []Route{{Kind: KindHTTP, Name: "r", Rules: []Rule{{Matches: []Match{{Path: &PathMatch{Type: PathPrefix, Value: "/"}}}, Backends: []BackendRef{{Cluster: "a", Weight: 1}}}}}},
			Clusters: []Cluster{{Protocol: ProtoHTTP1, Name: "a", Endpoints: []Endpoint{{Address: "127.0.0.1:1"}}}, {Protocol: ProtoHTTP1, Name: "b"}},
		}
	}
	endpoints := base()
	endpoints.Version = "v2"
	endpoints.Clusters[0].Endpoints = []Endpoint{{Address: "127.0.0.1:2"}}
	if !base().EqualRouting(endpoints) {
		t.Error("a new version and new endpoints changed the routing")
	}
	reordered := base()
	reordered.Clusters[0], reordered.Clusters[1] = reordered.Clusters[1], reordered.Clusters[0]
	renamed := base()
	renamed.Clusters[1].Name = "c"
	route := base()
	route.Routes[0].Name = "other"
	for name, cfg := range map[string]*Config{"reordered clusters": reordered, "renamed cluster": renamed, "route": route} {
		if base().EqualRouting(cfg) {
			t.Errorf("%s: EqualRouting says the same", name)
		}
	}
}

func TestEqualFrameLeavesOutRoutes(t *testing.T) {
	base := func() *Config {
		return &Config{Schema: SchemaVersion, Version: "v1",
			Listeners:   []Listener{{Name: "l", Port: 80, Protocol: "HTTP"}},
			Routes:      []Route{{Kind: KindHTTP, Name: "r", Rules: []Rule{{Backends: []BackendRef{{Cluster: "a", Weight: 1}}}}}},
			Clusters:    []Cluster{{Protocol: ProtoHTTP1, Name: "a"}},
			SessionKeys: [][]byte{[]byte("k1")},
			AccessTeams: []AccessTeam{{Domain: "t.example"}},
		}
	}
	edited := base()
	edited.Version = "v2"
	edited.Routes[0].Rules[0].Backends[0].Weight = 2
	edited.Routes = append(edited.Routes, Route{Kind: KindGRPC, Name: "g"})
	edited.Clusters[0].Endpoints = []Endpoint{{Address: "127.0.0.1:2"}}
	if !base().EqualFrame(edited) {
		t.Error("routes, endpoints and the version changed the frame")
	}
	if base().EqualRouting(edited) {
		t.Error("EqualRouting left out a route change")
	}
	for name, change := range map[string]func(*Config){
		"schema":      func(c *Config) { c.Schema += "x" },
		"listener":    func(c *Config) { c.Listeners[0].Port = 81 },
		"cluster":     func(c *Config) { c.Clusters[0].Name = "b" },
		"session key": func(c *Config) { c.SessionKeys[0] = []byte("k2") },
		"Access team": func(c *Config) { c.AccessTeams[0].Keys = "{}" },
	} {
		cfg := base()
		change(cfg)
		if base().EqualFrame(cfg) {
			t.Errorf("%s: EqualFrame says the same", name)
		}
	}
}
