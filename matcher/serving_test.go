package matcher

import (
	"slices"
	"strings"
	"testing"
)

// Serving yields the rules of every host entry a request for the host
// could reach, most specific first, whatever their paths and
// conditions, and keeps doing so after an Update.
func TestServing(t *testing.T) {
	tbl, err := Compile([]Rule[string]{
		r("api", hosts("api.example.com"), exact("/v1"), method("POST")),
		r("api-docs", hosts("api.example.com"), prefix("/docs"), header("x-v", "2")),
		r("wild", hosts("*.example.com"), regex("/w.*")),
		r("deep", hosts("*.a.example.com")),
		r("other", hosts("other.test")),
		r("both", hosts("b.example.com", "*.example.com"), prefix("/both")),
		r("all", prefix("/static")),
	})
	if err != nil {
		t.Fatal(err)
	}
	serving := func(tbl *Table[string], host string) string {
		return strings.Join(slices.Collect(tbl.Serving(host)), " ")
	}
	for _, tc := range []struct{ host, want string }{
		{"api.example.com", "api-docs api both wild all"},
		{"API.Example.com.:8443", "api-docs api both wild all"},
		{"x.a.example.com", "deep both wild all"},
		{"b.example.com", "both both wild all"},
		{"example.com", "all"},
		{"other.test", "other all"},
		{"nothing.test", "all"},
		{"[::1]:80", "all"},
		{strings.Repeat("a.", 130) + "example.com", "all"},
	} {
		if got := serving(tbl, tc.host); got != tc.want {
			t.Errorf("Serving(%q) = %q, want %q", tc.host, got, tc.want)
		}
	}

	// (Within an entry, rules come in the entry's precedence order, as
	// the table files them.)

	// Stopping early stops.
	for ref := range tbl.Serving("api.example.com") {
		if ref != "api-docs" {
			t.Errorf("first yielded %q, want api-docs", ref)
		}
		break
	}

	// After an Update: the catch-all gone, a rule added on a host.
	up, err := tbl.Update([]Key{{Created: t0, Namespace: "ns", Name: "all"}}, []*Prepared[string]{prepared(t, r("more", hosts("other.test")))})
	if err != nil {
		t.Fatal(err)
	}
	if got := serving(up, "other.test"); got != "more other" {
		t.Errorf("after Update: Serving(other.test) = %q", got)
	}
	if got := serving(up, "nothing.test"); got != "" {
		t.Errorf("after Update: Serving(nothing.test) = %q, want nothing", got)
	}
	var none *Table[string]
	if got := serving(none, "api.example.com"); got != "" {
		t.Errorf("a nil table serves %q", got)
	}
}

func prepared(t *testing.T, rule Rule[string]) *Prepared[string] {
	t.Helper()
	var p Preparer[string]
	pr, err := p.Prepare(&rule)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}
