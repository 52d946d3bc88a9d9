// This file compiles header filters into a plan.

package compiled

import (
	"fmt"
	"net/http"
	"net/textproto"

	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// HeaderPlan is the combined effect of a chain of header modifiers,
// computed once at compile time. Applying a chain one filter after another
// would copy or rewrite the header map per request; a plan says, for each
// name it touches, whether the incoming values are kept and which values
// follow, so the proxy can emit the result while it writes headers out.
//
// Within one modifier, Set applies first, then Add, then Remove: a name in
// both Set and Add ends with both values, and Remove wins over both.
type HeaderPlan struct {
	ops []HeaderOp
}

// HeaderOp is the outcome for one canonical header name.
type HeaderOp struct {
	Name string
	// Keep says whether the incoming values survive.
	Keep bool
	// Values follow the kept ones (or replace them). A slice of its own,
	// so it can be stored in a header map without copying; never written
	// to.
	Values []string
}

// Ops are the plan's outcomes, one per header name it touches, in the
// order the modifiers first named them; none for a nil plan. The proxy
// reads them to write the changed header as it sends it, without
// applying the plan to a copy; the slice must not be changed.
func (p *HeaderPlan) Ops() []HeaderOp {
	if p == nil {
		return nil
	}
	return p.ops
}

// compileHeaderPlan folds modifiers, in order, into one plan. Names are
// canonicalised; values are checked as RFC 9110 field values.
func compileHeaderPlan(mods ...*proxycfg.HeaderModifier) (*HeaderPlan, error) {
	p := &HeaderPlan{}
	for _, m := range mods {
		if m == nil {
			continue
		}
		for _, h := range m.Set {
			op, err := p.op(h.Name, h.Value)
			if err != nil {
				return nil, err
			}
			op.Keep, op.Values = false, []string{h.Value}
		}
		for _, h := range m.Add {
			op, err := p.op(h.Name, h.Value)
			if err != nil {
				return nil, err
			}
			op.Values = append(op.Values, h.Value)
		}
		for _, name := range m.Remove {
			op, err := p.op(name, "")
			if err != nil {
				return nil, err
			}
			op.Keep, op.Values = false, nil
		}
	}
	if len(p.ops) == 0 {
		return nil, nil
	}
	for i := range p.ops {
		// Cap each slice so that appending to it in a header map copies.
		v := p.ops[i].Values
		p.ops[i].Values = v[:len(v):len(v)]
	}
	return p, nil
}

func (p *HeaderPlan) op(name, value string) (*HeaderOp, error) {
	if !httpsyntax.IsToken(name) {
		return nil, fmt.Errorf("header name %q is not a valid field name (RFC 9110 §5.1)", name)
	}
	if !httpsyntax.ValidFieldValue([]byte(value)) {
		return nil, fmt.Errorf("value of header %q holds a control character or line break", name)
	}
	key := textproto.CanonicalMIMEHeaderKey(name)
	if httpsyntax.HopByHop(key) || key == "Host" || key == "Content-Length" || key == "Expect" {
		return nil, fmt.Errorf("header %q is managed by the proxy and cannot be modified", name)
	}
	for i := range p.ops {
		if p.ops[i].Name == key {
			return &p.ops[i], nil
		}
	}
	p.ops = append(p.ops, HeaderOp{Name: key, Keep: true})
	return &p.ops[len(p.ops)-1], nil
}

// Touches reports whether the plan decides the fate of the incoming header
// key (canonical), and if so whether its values are kept.
func (p *HeaderPlan) Touches(key string) (touched, keep bool) {
	if p == nil {
		return false, true
	}
	for i := range p.ops {
		if p.ops[i].Name == key {
			return true, p.ops[i].Keep
		}
	}
	return false, true
}

// Replaces reports whether the plan sets or removes key, which then
// overrides the value the proxy would write itself (X-Forwarded-For and
// X-Forwarded-Proto).
func (p *HeaderPlan) Replaces(key string) bool {
	touched, keep := p.Touches(key)
	return touched && !keep
}

// Apply edits h in place. It is used on response headers, which the proxy
// has already copied into the writer's map: Set stores the precomputed
// slice, so only Add onto existing values allocates.
func (p *HeaderPlan) Apply(h http.Header) {
	if p == nil {
		return
	}
	for i := range p.ops {
		op := &p.ops[i]
		switch {
		case !op.Keep && len(op.Values) == 0:
			delete(h, op.Name)
		case !op.Keep:
			h[op.Name] = op.Values
		case len(op.Values) > 0:
			if old, ok := h[op.Name]; ok {
				h[op.Name] = append(old[:len(old):len(old)], op.Values...)
			} else {
				h[op.Name] = op.Values
			}
		}
	}
}
