// Package gwcompat reads Gateway API objects written in the shape of the
// release before the one tunnelgate is built against, so that a cluster
// whose CRDs are a release behind keeps its routes' meaning.
//
// Gateway API v1.7 reshaped route-inline session persistence (experimental
// channel): sessionName became cookie.name or header.name, and
// cookieConfig became cookie. The Go types of v1.7 have no field for the
// old names, so an object stored by v1.6 CRDs would lose them when decoded
// into those types. The controller and standalone mode therefore upgrade
// an HTTPRoute or GRPCRoute in its untyped form first (Route), then decode
// it.
package gwcompat

// Route rewrites, in place, the v1.6 shape of session persistence in the
// rules of an HTTPRoute or GRPCRoute into v1.7's. obj is the whole object
// as untyped JSON (unstructured content, or JSON decoded into any):
//
//	sessionName   → cookie.name (type Cookie, the default) or header.name (type Header)
//	cookieConfig  → cookie
//
// A field of the new shape wins over the old field it replaces. Route
// reports whether it changed anything; anything it does not recognise is
// left as it is, for the decoder to judge.
func Route(obj map[string]any) bool {
	spec, _ := obj["spec"].(map[string]any)
	rules, _ := spec["rules"].([]any)
	changed := false
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		if sp, ok := rule["sessionPersistence"].(map[string]any); ok && sessionPersistence(sp) {
			changed = true
		}
	}
	return changed
}

// sessionPersistence upgrades one sessionPersistence object.
func sessionPersistence(sp map[string]any) bool {
	cfg, hasCfg := sp["cookieConfig"]
	name, hasName := sp["sessionName"]
	if !hasCfg && !hasName {
		return false
	}
	delete(sp, "cookieConfig")
	delete(sp, "sessionName")
	if old, ok := cfg.(map[string]any); ok {
		cookie := child(sp, "cookie")
		for k, v := range old {
			if _, set := cookie[k]; !set {
				cookie[k] = v
			}
		}
	}
	if n, ok := name.(string); ok && n != "" {
		into := "cookie"
		if t, _ := sp["type"].(string); t == "Header" {
			into = "header"
		}
		if m := child(sp, into); m["name"] == nil {
			m["name"] = n
		}
	}
	return true
}

// child returns m[key] as an object, made when absent.
func child(m map[string]any, key string) map[string]any {
	if c, ok := m[key].(map[string]any); ok {
		return c
	}
	c := map[string]any{}
	m[key] = c
	return c
}
