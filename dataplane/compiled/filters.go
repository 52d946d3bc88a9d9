// This file implements the table of filter kinds the proxy runs, one row each.

package compiled

import (
	"errors"
	"fmt"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// filterSet is what a list of filters asks for, by kind. Header
// modifiers of the same direction fold into one plan later, in order.
type filterSet struct {
	reqMods, respMods []*proxycfg.HeaderModifier
	redirect          *proxycfg.Redirect
	rewrite           *proxycfg.Rewrite
	cors              *CORS
	mirrors           []*Mirror
}

// filterKind is one filter type the proxy runs: the proxycfg.Filter
// field that carries its settings, whether a backend may carry it, and
// what it adds to the filterSet of the list it is in. Where the request
// path runs it is the compiled Rule's business (its plans, CORS,
// mirrors; a target's redirect and rewrite).
type filterKind struct {
	// typ is its Filter.Type, spelt as the Gateway API spells the filter.
	typ string
	// has says whether f carries this kind's settings.
	has func(f *proxycfg.Filter) bool
	// backend says a backendRef's filters may carry it, not only a rule's.
	backend bool
	// add compiles f into set, reporting each problem to bad.
	add func(c *ruleCompiler, set *filterSet, f *proxycfg.Filter, bad func(error))
}

// filterKinds is every filter type the proxy runs. A new filter is a row
// here; TestFilterKinds holds the table to proxycfg.Filter's fields and
// to the Gateway API's filter types.
var filterKinds = []filterKind{
	{
		typ:     proxycfg.FilterRequestHeaderModifier,
		has:     func(f *proxycfg.Filter) bool { return f.RequestHeaderModifier != nil },
		backend: true,
		add: func(_ *ruleCompiler, set *filterSet, f *proxycfg.Filter, _ func(error)) {
			set.reqMods = append(set.reqMods, f.RequestHeaderModifier)
		},
	},
	{
		typ:     proxycfg.FilterResponseHeaderModifier,
		has:     func(f *proxycfg.Filter) bool { return f.ResponseHeaderModifier != nil },
		backend: true,
		add: func(_ *ruleCompiler, set *filterSet, f *proxycfg.Filter, _ func(error)) {
			set.respMods = append(set.respMods, f.ResponseHeaderModifier)
		},
	},
	{
		typ: proxycfg.FilterRequestRedirect,
		has: func(f *proxycfg.Filter) bool { return f.RequestRedirect != nil },
		add: func(_ *ruleCompiler, set *filterSet, f *proxycfg.Filter, bad func(error)) {
			if set.redirect != nil {
				bad(errors.New("more than one RequestRedirect"))
			}
			set.redirect = f.RequestRedirect
		},
	},
	{
		typ:     proxycfg.FilterURLRewrite,
		has:     func(f *proxycfg.Filter) bool { return f.URLRewrite != nil },
		backend: true,
		add: func(_ *ruleCompiler, set *filterSet, f *proxycfg.Filter, bad func(error)) {
			if set.rewrite != nil {
				bad(errors.New("more than one URLRewrite"))
			}
			set.rewrite = f.URLRewrite
		},
	},
	{
		typ:     proxycfg.FilterRequestMirror,
		has:     func(f *proxycfg.Filter) bool { return f.RequestMirror != nil },
		backend: true,
		add: func(c *ruleCompiler, set *filterSet, f *proxycfg.Filter, bad func(error)) {
			m, err := compileMirror(f.RequestMirror, c.cluster)
			if err != nil {
				bad(err)
				return
			}
			set.mirrors = append(set.mirrors, m)
		},
	},
	{
		typ: proxycfg.FilterCORS,
		has: func(f *proxycfg.Filter) bool { return f.CORS != nil },
		add: func(_ *ruleCompiler, set *filterSet, f *proxycfg.Filter, bad func(error)) {
			if set.cors != nil {
				bad(errors.New("more than one CORS filter"))
			}
			cors, err := compileCORS(f.CORS)
			if err != nil {
				bad(err)
				return
			}
			set.cors = cors
		},
	},
}

// checkFilter returns the kind of f, making sure exactly the field named
// by its Type is set.
func checkFilter(f *proxycfg.Filter) (*filterKind, error) {
	var kind *filterKind
	for i := range filterKinds {
		if filterKinds[i].typ == f.Type {
			kind = &filterKinds[i]
		}
	}
	if kind == nil {
		return nil, fmt.Errorf("unknown filter type %q (translate must fail such a rule closed with failStatus)", f.Type)
	}
	if !kind.has(f) {
		return nil, fmt.Errorf("filter %s has no %s settings", f.Type, f.Type)
	}
	for i := range filterKinds {
		if k := &filterKinds[i]; k != kind && k.has(f) {
			return nil, fmt.Errorf("filter %s also carries %s settings", f.Type, k.typ)
		}
	}
	return kind, nil
}
