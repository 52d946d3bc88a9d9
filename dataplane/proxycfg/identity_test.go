package proxycfg

import "testing"

// Identities do not depend on position; a rule's is its name when it has
// one, else its index within its route.
func TestIdentities(t *testing.T) {
	r := Route{Kind: KindGRPC, Namespace: "ns", Name: "app", Rules: []Rule{{}, {Name: "b"}}}
	if got, want := r.RuleID(0).String(), "GRPCRoute ns/app#0"; got != want {
		t.Errorf("RuleID(0) = %q, want %q", got, want)
	}
	if got, want := r.RuleID(1).String(), "GRPCRoute ns/app/b"; got != want {
		t.Errorf("RuleID(1) = %q, want %q", got, want)
	}
	moved := r
	moved.Rules = []Rule{{Name: "b"}}
	if moved.RuleID(0) != r.RuleID(1) {
		t.Error("a named rule's identity changed with its index")
	}
	if http := (Route{Kind: KindHTTP, Namespace: "ns", Name: "app"}); http.ID() == r.ID() {
		t.Error("an HTTPRoute and a GRPCRoute of one name have one identity")
	}
}
