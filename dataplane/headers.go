package dataplane

import (
	"fmt"
	"net/http"
	"net/textproto"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// headerPlan is the combined effect of a chain of header modifiers,
// computed once at compile time. Applying a chain one filter after another
// would copy or rewrite the header map per request; a plan says, for each
// name it touches, whether the incoming values are kept and which values
// follow, so the proxy can emit the result while it writes headers out.
//
// Within one modifier, Set applies first, then Add, then Remove: a name in
// both Set and Add ends with both values, and Remove wins over both.
type headerPlan struct {
	ops []headerOp
}

// headerOp is the outcome for one canonical header name.
type headerOp struct {
	name string
	// keep says whether the incoming values survive.
	keep bool
	// values follow the kept ones (or replace them). A slice of its own,
	// so it can be stored in a header map without copying.
	values []string
}

// compileHeaderPlan folds modifiers, in order, into one plan. Names are
// canonicalised; values are checked as RFC 9110 field values.
func compileHeaderPlan(mods ...*proxycfg.HeaderModifier) (*headerPlan, error) {
	p := &headerPlan{}
	for _, m := range mods {
		if m == nil {
			continue
		}
		for _, h := range m.Set {
			op, err := p.op(h.Name, h.Value)
			if err != nil {
				return nil, err
			}
			op.keep, op.values = false, []string{h.Value}
		}
		for _, h := range m.Add {
			op, err := p.op(h.Name, h.Value)
			if err != nil {
				return nil, err
			}
			op.values = append(op.values, h.Value)
		}
		for _, name := range m.Remove {
			op, err := p.op(name, "")
			if err != nil {
				return nil, err
			}
			op.keep, op.values = false, nil
		}
	}
	if len(p.ops) == 0 {
		return nil, nil
	}
	for i := range p.ops {
		// Cap each slice so that appending to it in a header map copies.
		v := p.ops[i].values
		p.ops[i].values = v[:len(v):len(v)]
	}
	return p, nil
}

func (p *headerPlan) op(name, value string) (*headerOp, error) {
	if !http1.IsToken(name) {
		return nil, fmt.Errorf("header name %q is not a valid field name (RFC 9110 §5.1)", name)
	}
	if !http1.ValidFieldValue([]byte(value)) {
		return nil, fmt.Errorf("value of header %q holds a control character or line break", name)
	}
	key := textproto.CanonicalMIMEHeaderKey(name)
	if http1.HopByHop(key) || key == "Host" || key == "Content-Length" || key == "Expect" {
		return nil, fmt.Errorf("header %q is managed by the proxy and cannot be modified", name)
	}
	for i := range p.ops {
		if p.ops[i].name == key {
			return &p.ops[i], nil
		}
	}
	p.ops = append(p.ops, headerOp{name: key, keep: true})
	return &p.ops[len(p.ops)-1], nil
}

// touches reports whether the plan decides the fate of the incoming header
// key (canonical), and if so whether its values are kept.
func (p *headerPlan) touches(key string) (touched, keep bool) {
	if p == nil {
		return false, true
	}
	for i := range p.ops {
		if p.ops[i].name == key {
			return true, p.ops[i].keep
		}
	}
	return false, true
}

// replaces reports whether the plan sets or removes key, which then
// overrides the value the proxy would write itself (X-Forwarded-For and
// X-Forwarded-Proto).
func (p *headerPlan) replaces(key string) bool {
	touched, keep := p.touches(key)
	return touched && !keep
}

// apply edits h in place. It is used on response headers, which the proxy
// has already copied into the writer's map: Set stores the precomputed
// slice, so only Add onto existing values allocates.
func (p *headerPlan) apply(h http.Header) {
	if p == nil {
		return
	}
	for i := range p.ops {
		op := &p.ops[i]
		switch {
		case !op.keep && len(op.values) == 0:
			delete(h, op.name)
		case !op.keep:
			h[op.name] = op.values
		case len(op.values) > 0:
			if old, ok := h[op.name]; ok {
				h[op.name] = append(old[:len(old):len(old)], op.values...)
			} else {
				h[op.name] = op.values
			}
		}
	}
}
