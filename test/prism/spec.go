package prism

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
)

// DefaultPaths are the path templates of Cloudflare's spec that tunnelgate
// calls: what a Server serves unless Options says otherwise. Add one here
// when the controller starts calling a new endpoint; until then Prism
// answers it 404 "no path matched", so nothing goes unchecked.
var DefaultPaths = []string{
	"/accounts",
	"/accounts/{account_id}",
	"/zones",
	"/zones/{zone_id}",
	"/accounts/{account_id}/cfd_tunnel",
	"/accounts/{account_id}/cfd_tunnel/{tunnel_id}",
	"/accounts/{account_id}/cfd_tunnel/{tunnel_id}/token",
	"/accounts/{account_id}/cfd_tunnel/{tunnel_id}/configurations",
	"/accounts/{account_id}/cfd_tunnel/{tunnel_id}/connections",
	"/zones/{zone_id}/dns_records",
	"/zones/{zone_id}/dns_records/{dns_record_id}",
	"/zones/{zone_id}/dns_records/batch",
	"/{accounts_or_zones}/{account_or_zone_id}/access/apps",
	"/{accounts_or_zones}/{account_or_zone_id}/access/apps/{app_id}",
	"/accounts/{account_id}/access/policies",
	"/accounts/{account_id}/access/policies/{policy_id}",
	"/accounts/{account_id}/access/tags",
	"/accounts/{account_id}/load_balancers/monitors",
	"/accounts/{account_id}/load_balancers/monitors/{monitor_id}",
	"/accounts/{account_id}/load_balancers/pools",
	"/accounts/{account_id}/load_balancers/pools/{pool_id}",
	"/{accounts_or_zones}/{account_or_zone_id}/load_balancers",
	"/{accounts_or_zones}/{account_or_zone_id}/load_balancers/{load_balancer_id}",
}

// A patch is a correction of Cloudflare's spec where it refuses a request
// that the real API accepts and documents. Each is applied to a copy at run
// time (the cached spec stays as cloudflare-go ships it), checks that the
// defect is still there (so a spec that fixes it fails Start with a message
// saying to drop the patch), and has a test proving that the unpatched spec
// refuses the request and the patched one accepts it (spec_test.go).
type patch struct {
	name  string
	why   string
	apply func(doc map[string]any) error
}

// patches are applied in order unless Options.Unpatched.
var patches = []patch{
	{
		name: "ingress-catch-all",
		why: "components.schemas.tunnel_ingressRule lists hostname as required, but the last " +
			"ingress rule of every remotely managed tunnel must be a catch-all without one, " +
			`{"service":"http_status:404"}, as Cloudflare documents and cloudflared requires; ` +
			`the patch drops "hostname" from that schema's required list (service stays required)`,
		apply: func(doc map[string]any) error {
			rule, err := lookup(doc, "components", "schemas", "tunnel_ingressRule")
			if err != nil {
				return err
			}
			req, _ := rule["required"].([]any)
			i := slices.Index(req, any("hostname"))
			if i < 0 {
				return fmt.Errorf(`tunnel_ingressRule no longer requires "hostname" (required: %v): the spec is fixed, drop this patch and its test`, req)
			}
			rule["required"] = slices.Delete(slices.Clone(req), i, i+1)
			return nil
		},
	},
	{
		name: "accounts-with-token",
		why: "GET /accounts and GET /accounts/{account_id} allow only the legacy X-Auth-Email + " +
			"X-Auth-Key scheme, while the real API answers them for an API token too (how " +
			"tunnelgate finds its account); the patch adds the api_token (Bearer) scheme to " +
			"these two operations' security, as every tunnel and DNS operation already has it",
		apply: func(doc map[string]any) error {
			for _, path := range []string{"/accounts", "/accounts/{account_id}"} {
				op, err := lookup(doc, "paths", path, "get")
				if err != nil {
					return err
				}
				sec, _ := op["security"].([]any)
				for _, s := range sec {
					if m, ok := s.(map[string]any); ok && m["api_token"] != nil {
						return fmt.Errorf("GET %s already accepts api_token: the spec is fixed, drop this patch and its test", path)
					}
				}
				op["security"] = append([]any{map[string]any{"api_token": []any{}}}, sec...)
			}
			return nil
		},
	},
}

// lookup walks doc along keys to an object.
func lookup(doc map[string]any, keys ...string) (map[string]any, error) {
	cur := doc
	for i, k := range keys {
		next, ok := cur[k].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("the spec has no object at %s", strings.Join(keys[:i+1], " > "))
		}
		cur = next
	}
	return cur, nil
}

// specCache keeps each document Start derived, by options, for the life of
// the test process: deriving one parses the 12.5 MB spec (about a second).
var specCache struct {
	sync.Mutex
	docs map[string][]byte
}

// derivedSpec returns the document a Server with opts serves.
func derivedSpec(source string, opts Options) ([]byte, error) {
	key := fmt.Sprintf("%s|unpatched=%v|all=%v|%s", source, opts.Unpatched, opts.AllPaths, strings.Join(opts.paths(), ","))
	specCache.Lock()
	defer specCache.Unlock()
	if b, ok := specCache.docs[key]; ok {
		return b, nil
	}
	raw, err := os.ReadFile(source)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep every number as written
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("prism: %s is not JSON (run `make prism` again after removing it): %w", source, err)
	}
	if !opts.Unpatched {
		for _, p := range patches {
			if err := p.apply(doc); err != nil {
				return nil, fmt.Errorf("prism: spec patch %q: %w", p.name, err)
			}
		}
	}
	if !opts.AllPaths {
		if err := trim(doc, opts.paths()); err != nil {
			return nil, err
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if specCache.docs == nil {
		specCache.docs = map[string][]byte{}
	}
	specCache.docs[key] = b
	return b, nil
}

// trim keeps only the path items keep names, and the components they
// reference, because Prism takes about 30 s and 500 MB to load the 2,000
// paths of the whole spec, and 2 s and 160 MB for ours. Validation of a
// kept path is unchanged: its schemas come whole. So is routing: trim also
// keeps every path that could match a request one of the kept paths
// matches (same number of segments, each equal or a {parameter} on either
// side), so Prism picks the same operation for such a request as with the
// whole spec; any other request gets 404.
func trim(doc map[string]any, keep []string) error {
	paths, ok := doc["paths"].(map[string]any)
	if !ok {
		return fmt.Errorf("prism: the spec has no paths")
	}
	kept := map[string]bool{}
	for _, p := range keep {
		if _, ok := paths[p]; !ok {
			return fmt.Errorf("prism: Cloudflare's spec has no path %s", p)
		}
		kept[p] = true
	}
	// Close over overlap until nothing is added.
	for added := true; added; {
		added = false
		for p := range paths {
			if kept[p] {
				continue
			}
			for k := range kept {
				if overlap(p, k) {
					kept[p], added = true, true
					break
				}
			}
		}
	}
	newPaths := map[string]any{}
	for p := range kept {
		newPaths[p] = paths[p]
	}
	doc["paths"] = newPaths

	comps, _ := doc["components"].(map[string]any)
	newComps := map[string]any{}
	if s, ok := comps["securitySchemes"]; ok {
		newComps["securitySchemes"] = s
	}
	// Follow $refs from the kept paths through the components they name.
	var todo []string
	collectRefs(newPaths, &todo)
	seen := map[string]bool{}
	for len(todo) > 0 {
		ref := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[ref] {
			continue
		}
		seen[ref] = true
		kind, name, err := componentOf(ref)
		if err != nil {
			return err
		}
		src, _ := comps[kind].(map[string]any)
		v, ok := src[name]
		if !ok {
			return fmt.Errorf("prism: the spec refers to %s, which it does not define", ref)
		}
		dst, _ := newComps[kind].(map[string]any)
		if dst == nil {
			dst = map[string]any{}
			newComps[kind] = dst
		}
		if _, done := dst[name]; !done {
			dst[name] = v
			collectRefs(v, &todo)
		}
	}
	doc["components"] = newComps
	delete(doc, "tags") // they name the operations left out; Prism ignores them
	return nil
}

// overlap reports whether some request path matches both templates.
func overlap(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	if len(as) != len(bs) {
		return false
	}
	for i := range as {
		if as[i] != bs[i] && !strings.Contains(as[i], "{") && !strings.Contains(bs[i], "{") {
			return false
		}
	}
	return true
}

// collectRefs appends every "$ref" under v.
func collectRefs(v any, refs *[]string) {
	switch v := v.(type) {
	case map[string]any:
		if r, ok := v["$ref"].(string); ok {
			*refs = append(*refs, r)
		}
		for _, e := range v {
			collectRefs(e, refs)
		}
	case []any:
		for _, e := range v {
			collectRefs(e, refs)
		}
	}
}

// componentOf names the component a local reference points into,
// "#/components/<kind>/<name>[/...]", decoding JSON Pointer escapes.
func componentOf(ref string) (kind, name string, err error) {
	parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
	if !strings.HasPrefix(ref, "#/components/") || len(parts) < 3 {
		return "", "", fmt.Errorf("prism: cannot trim the spec: $ref %q does not point into #/components (serve it whole with AllPaths)", ref)
	}
	unescape := strings.NewReplacer("~1", "/", "~0", "~")
	return unescape.Replace(parts[1]), unescape.Replace(parts[2]), nil
}

// PatchNotes describes the corrections Start applies to Cloudflare's spec,
// one line each, for logs and failure messages.
func PatchNotes() []string {
	var out []string
	for _, p := range patches {
		out = append(out, p.name+": "+p.why)
	}
	sort.Strings(out)
	return out
}
