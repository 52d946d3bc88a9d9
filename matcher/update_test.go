package matcher

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// model is what a table should hold: the rule list Build would be given.
// Update's contract is that a table updated from another answers like
// Build over this list.
type model struct {
	rules    []Rule[int]
	prepared []*Prepared[int]
}

// update applies a change to the model as Update's contract words it:
// every rule whose Key is removed goes, the added ones follow the rest.
func (m model) update(remove []Key, add []Rule[int], addPrepared []*Prepared[int]) model {
	gone := map[keyID]bool{}
	for i := range remove {
		gone[idOf(&remove[i])] = true
	}
	var next model
	for i := range m.rules {
		if !gone[idOf(&m.rules[i].Key)] {
			next.rules = append(next.rules, m.rules[i])
			next.prepared = append(next.prepared, m.prepared[i])
		}
	}
	next.rules = append(next.rules, add...)
	next.prepared = append(next.prepared, addPrepared...)
	return next
}

// checkSame fails t unless got answers every request as want does and
// has the same structure: the same host entries, each with the same
// fallback chain and the same trie (keys, lists, refs and ranks).
func checkSame(t *testing.T, what string, got, want *Table[int], reqs []Request) {
	t.Helper()
	if got.Len() != want.Len() {
		t.Errorf("%s: Len = %d, want %d", what, got.Len(), want.Len())
	}
	g, w := dumpTable(t, got), dumpTable(t, want)
	for name, wd := range w {
		if gd, ok := g[name]; !ok {
			t.Errorf("%s: host entry %q missing", what, name)
		} else if gd != wd {
			t.Errorf("%s: host entry %q differs:\ngot  %s\nwant %s", what, name, gd, wd)
		}
	}
	for name := range g {
		if _, ok := w[name]; !ok {
			t.Errorf("%s: host entry %q should not be there", what, name)
		}
	}
	for i := range reqs {
		q := &reqs[i]
		gr, gok := got.Match(q)
		wr, wok := want.Match(q)
		if gr != wr || gok != wok {
			t.Errorf("%s: %s %s%s?%s %v: got %d %v, want %d %v", what, q.Method, q.Host, q.Path, q.RawQuery, q.Header, gr, gok, wr, wok)
		}
	}
}

// dumpTable describes each host entry of a table, by hostname, without
// the positions it happens to be laid out at, and checks what must agree
// inside the table: the lookup tables and the entries, each node's
// ancestors with rules, depths and child bytes.
func dumpTable(t *testing.T, tb *Table[int]) map[string]string {
	t.Helper()
	names := map[int32]string{}
	for _, h := range tb.src.byEntry() {
		if h != nil {
			names[h.entry] = h.name
		}
	}
	if got, want := tb.hosts.exact.count, tb.src.exact.len(); got != want {
		t.Errorf("exact host table holds %d names, source %d", got, want)
	}
	if got, want := tb.hosts.wild.count, tb.src.wild.len(); got != want {
		t.Errorf("wildcard host table holds %d names, source %d", got, want)
	}
	nodes, cands := 0, 0
	dump := map[string]string{}
	for e, name := range names {
		ref := *tb.hosts.entries.get(uint64(e))
		h := tb.src.host(name)
		nodes, cands = nodes+h.nodes, cands+len(h.rules)
		switch key, wild := h.hostKey(); {
		case name == "":
			if tb.hosts.catchAll != e {
				t.Errorf("catch-all is entry %d, want %d", tb.hosts.catchAll, e)
			}
		case wild:
			if r, ok := get(&tb.hosts.wild, key); !ok || r != ref {
				t.Errorf("wildcard %q: lookup gives %v %v, entry %d is %v", name, r, ok, e, ref)
			}
		default:
			if r, ok := get(&tb.hosts.exact, key); !ok || r != ref {
				t.Errorf("host %q: lookup gives %v %v, entry %d is %v", name, r, ok, e, ref)
			}
		}
		var b strings.Builder
		b.WriteString("chain:")
		for next, n := ref.next, 0; next >= 0; next, n = tb.hosts.entries.get(uint64(next)).next, n+1 {
			if n > len(names) {
				t.Fatalf("host %q: its fallbacks go round in a loop", name)
			}
			fmt.Fprintf(&b, " %q", names[next])
		}
		root := &tb.nodes[ref.root]
		if wantStart := ref.root + 1; root.nchild == 1 && ref.start != wantStart || root.nchild != 1 && ref.start != ref.root {
			t.Errorf("host %q: starts at %d, root %d has %d children", name, ref.start, ref.root, root.nchild)
		}
		var lines []string
		dumpNode(t, tb, ref.root, "", -1, -1, &lines)
		sort.Strings(lines)
		b.WriteString(" trie:" + strings.Join(lines, ""))
		dump[name] = b.String()
	}
	if nodes != tb.src.nodes || cands != tb.src.cands {
		t.Errorf("source counts %d nodes, %d candidates; its hosts %d, %d", tb.src.nodes, tb.src.cands, nodes, cands)
	}
	checkRoutes(t, tb)
	return dump
}

// checkRoutes checks the route index against the rules filed: each route
// counts its rules and names (at least) the hostnames they are filed under.
func checkRoutes(t *testing.T, tb *Table[int]) {
	t.Helper()
	counted := map[routeID]map[*Prepared[int]]bool{}
	for _, h := range tb.src.byEntry() {
		if h == nil {
			continue
		}
		for _, r := range h.rules {
			id := r.p.order.nsName
			route, ok := tb.src.routes.get(id)
			if !ok || !slices.Contains(route.hostnames, h.name) {
				t.Errorf("route %v of a rule on %q: indexed %v under %q", id, h.name, ok, route.hostnames)
			}
			if counted[id] == nil {
				counted[id] = map[*Prepared[int]]bool{}
			}
			counted[id][r.p] = true
		}
	}
	rules := 0
	for id, route := range tb.src.routes.all() {
		// A Prepared filed twice counts twice: count rules per host list
		// on their first hostname.
		n := 0
		for _, h := range tb.src.byEntry() {
			if h == nil {
				continue
			}
			for _, r := range h.rules {
				if r.p.order.nsName == id && r.p.place.hostnames[0] == h.name {
					n++
				}
			}
		}
		if n != route.rules || n == 0 {
			t.Errorf("route %v counts %d rules, has %d", id, route.rules, n)
		}
		rules += n
	}
	if rules != tb.src.rules || len(counted) != tb.src.routes.len() {
		t.Errorf("source counts %d rules in %d routes; its hosts hold %d in %d", tb.src.rules, tb.src.routes.len(), rules, len(counted))
	}
}

// labelOf is n's edge label, copied.
func labelOf(tb *Table[int], n *node) string {
	if int(n.labelLen) <= len(n.inline) {
		return string(n.inline[:n.labelLen])
	}
	return string(tb.labels[n.labelOff : n.labelOff+uint32(n.labelLen)])
}

func dumpNode(t *testing.T, tb *Table[int], at uint32, key string, prefixUp, regexUp int32, lines *[]string) {
	n := &tb.nodes[at]
	key += labelOf(tb, n)
	if int(n.depth) != len(key) || n.prefixUp != prefixUp || n.regexUp != regexUp {
		t.Errorf("node %q: depth %d, ancestors %d %d, want %d %d", key, n.depth, n.prefixUp, n.regexUp, prefixUp, regexUp)
	}
	list := func(from, to uint32) string {
		var parts []string
		for i := from; i < to; i++ {
			parts = append(parts, fmt.Sprintf("%d#%d", tb.cands[i].ref, tb.cands[i].rank))
		}
		return strings.Join(parts, ",")
	}
	if n.nexact+n.nprefix+n.nregex > 0 {
		ef, et := n.exactRange()
		pf, pt := n.prefixRange()
		rf, rt := n.regexRange()
		*lines = append(*lines, fmt.Sprintf(" [%q E %s P %s R %s]", key, list(ef, et), list(pf, pt), list(rf, rt)))
	}
	if n.nprefix > 0 {
		prefixUp = int32(at)
	}
	if n.nregex > 0 {
		regexUp = int32(at)
	}
	for i := range uint32(n.nchild) {
		c := n.child + i
		if tb.firsts[c] != labelOf(tb, &tb.nodes[c])[0] || i < 8 && n.firsts[i] != tb.firsts[c] {
			t.Errorf("node %q: child %d's first byte is recorded wrong", key, i)
		}
		dumpNode(t, tb, c, key, prefixUp, regexUp, lines)
	}
}

// snapshot copies everything a table's answers depend on, to show that
// Update leaves the table it starts from as it was.
type snapshot struct {
	nodes       []node
	cands       []candidate[int]
	firsts      []byte
	labels      []byte
	entries     [][]hostRef
	exact, wild [][]hostSlot
	long        map[string]hostRef
	catchAll    int32
	rules       int
	source      map[string]string
}

func snap(tb *Table[int]) snapshot {
	s := snapshot{
		nodes: slices.Clone(tb.nodes), cands: slices.Clone(tb.cands), firsts: slices.Clone(tb.firsts), labels: slices.Clone(tb.labels),
		entries: clonePages(tb.hosts.entries.pages), exact: clonePages(tb.hosts.exact.slots.pages), wild: clonePages(tb.hosts.wild.slots.pages),
		long: tb.hosts.exact.long, catchAll: tb.hosts.catchAll, rules: tb.rules, source: map[string]string{},
	}
	for _, h := range tb.src.byEntry() {
		if h != nil {
			s.source[h.name] = fmt.Sprintf("entry %d nodes %d rules %v", h.entry, h.nodes, h.rules)
		}
	}
	return s
}

func clonePages[E any](pages [][]E) [][]E {
	out := make([][]E, len(pages))
	for i, p := range pages {
		out[i] = slices.Clone(p)
	}
	return out
}

// requestsFor aims requests at rules: their hosts (wildcards' too, and
// hosts beside them), their paths and below, with and without their
// method, headers and query.
func requestsFor(rules []Rule[int], n int, rng *rand.Rand) []Request {
	var hosts, paths []string
	for _, r := range rules {
		for _, h := range r.Hostnames {
			if suffix, ok := strings.CutPrefix(h, "*."); ok {
				hosts = append(hosts, "x."+suffix, "y.x."+suffix, suffix)
			} else {
				hosts = append(hosts, h, "other."+h)
			}
		}
		p := r.Path.Value
		if r.Path.Kind == PathRegex {
			p = "/" + words[rng.IntN(len(words))] + "/item-1/" + words[rng.IntN(len(words))]
		}
		paths = append(paths, p, p+"/x", strings.TrimSuffix(p, "/")+"x")
	}
	hosts = append(hosts, "unknown.example.org")
	reqs := make([]Request, n)
	for i := range reqs {
		r := rules[rng.IntN(len(rules))]
		q := Request{Host: hosts[rng.IntN(len(hosts))], Path: NormalizePath(paths[rng.IntN(len(paths))]),
			Method: methods[rng.IntN(len(methods))], Header: http.Header{}}
		if rng.IntN(2) == 0 {
			q.Method = r.Method
			for _, h := range r.Headers {
				q.Header.Set(h.Name, h.Value)
			}
			for _, v := range r.Query {
				q.RawQuery += v.Name + "=" + v.Value + "&"
			}
		}
		reqs[i] = q
	}
	return reqs
}

// randomChange picks rules of m to remove (whole routes, single matches,
// sometimes replaced by a rule of the same Key) and rules of pool to add
// (sometimes with the Key of a rule that stays, so Keys repeat).
func randomChange(m model, pool []Rule[int], rng *rand.Rand, ref *int) (remove []Key, add []Rule[int]) {
	if len(m.rules) > 0 {
		for range rng.IntN(4) {
			victim := m.rules[rng.IntN(len(m.rules))].Key
			if rng.IntN(2) == 0 { // the whole route
				for _, r := range m.rules {
					if r.Key.Namespace == victim.Namespace && r.Key.Name == victim.Name && r.Key.Created.Equal(victim.Created) {
						remove = append(remove, r.Key)
					}
				}
			} else {
				remove = append(remove, victim)
			}
		}
	}
	fresh := func(key Key) Rule[int] {
		r := pool[rng.IntN(len(pool))]
		r.Key, r.Ref = key, *ref
		*ref++
		return r
	}
	for _, k := range remove {
		if rng.IntN(2) == 0 {
			add = append(add, fresh(k)) // a replacement
		}
	}
	for range rng.IntN(4) {
		key := Key{Created: t0.Add(time.Duration(rng.IntN(100)) * time.Hour), Namespace: "new", Name: fmt.Sprint("r", *ref)}
		switch x := rng.IntN(8); {
		case len(m.rules) == 0 || x > 1:
			add = append(add, fresh(key))
		case x == 0:
			add = append(add, fresh(m.rules[rng.IntN(len(m.rules))].Key)) // a Key the table holds already
		default:
			// A copy of a rule, Key and all: only input order ranks them.
			twin := m.rules[rng.IntN(len(m.rules))]
			twin.Ref = *ref
			*ref++
			add = append(add, twin, twin)
			add[len(add)-1].Ref = *ref
			*ref++
		}
	}
	return remove, add
}

// TestUpdateMatchesBuild is the contract, on random rule sets and random
// chains of changes: after every Update, the table answers and looks like
// Build over the model's list, and the table it came from is unchanged.
// Every few steps the old table is also updated a second way (a fork),
// which must not disturb the first.
func TestUpdateMatchesBuild(t *testing.T) {
	var appended, relaid, forks int
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		set := generate(10+rng.IntN(150), 0, seed)
		pool := generate(60, 0, seed+1000).rules
		// Some edge labels longer than a node holds inline.
		for _, rules := range [][]Rule[int]{set.rules, pool} {
			for i := range rules {
				if i%5 == 0 && rules[i].Path.Kind != PathRegex {
					rules[i].Path.Value += "/a-path-segment-too-long-to-inline"
				}
			}
		}
		m := model{rules: set.rules}
		var err error
		if m.prepared, err = prepareAll(m.rules); err != nil {
			t.Fatal(err)
		}
		table, err := Build(m.prepared)
		if err != nil {
			t.Fatal(err)
		}
		ref := 1 << 20
		for step := range 25 {
			what := fmt.Sprintf("seed %d step %d", seed, step)
			remove, add := randomChange(m, pool, rng, &ref)
			addPrepared, err := prepareAll(add)
			if err != nil {
				t.Fatal(err)
			}
			next := m.update(remove, add, addPrepared)
			reqs := requestsFor(append(slices.Clone(next.rules), pool...), 300, rng)
			before := snap(table)
			oldAnswers := answers(table, reqs)

			got, err := table.Update(remove, addPrepared)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			want, err := Build(next.prepared)
			if err != nil {
				t.Fatal(err)
			}
			checkSame(t, what, got, want, reqs)
			if len(got.nodes) > got.src.nodes {
				appended++
			} else {
				relaid++
			}

			if step%4 == 3 { // a fork: t updated again, differently
				forks++
				remove2, add2 := randomChange(m, pool, rng, &ref)
				add2Prepared, err := prepareAll(add2)
				if err != nil {
					t.Fatal(err)
				}
				other, err := table.Update(remove2, add2Prepared)
				if err != nil {
					t.Fatalf("%s fork: %v", what, err)
				}
				otherWant, err := Build(m.update(remove2, add2, add2Prepared).prepared)
				if err != nil {
					t.Fatal(err)
				}
				checkSame(t, what+" fork", other, otherWant, reqs)
				checkSame(t, what+" after the fork", got, want, reqs)
			}
			if !reflect.DeepEqual(snap(table), before) {
				t.Fatalf("%s: Update changed the table it started from", what)
			}
			if !slices.Equal(answers(table, reqs), oldAnswers) {
				t.Fatalf("%s: the table Update started from answers differently", what)
			}
			if t.Failed() {
				t.FailNow()
			}
			table, m = got, next
		}
	}
	// Both ways of laying out an Update must have been taken.
	if appended == 0 || relaid == 0 || forks == 0 {
		t.Errorf("appended %d times, laid out afresh %d times, forked %d times: a path is not tested", appended, relaid, forks)
	}
}

// answers is what a table answers each request.
func answers(tb *Table[int], reqs []Request) []int {
	out := make([]int, len(reqs))
	for i := range reqs {
		if ref, ok := tb.Match(&reqs[i]); ok {
			out[i] = ref
		} else {
			out[i] = -1
		}
	}
	return out
}

// TestUpdateHostChain walks hosts coming and going where they change
// other hosts' fallbacks: a wildcard between an exact host and a shorter
// wildcard, the catch-all, and their removal.
func TestUpdateHostChain(t *testing.T) {
	var p Preparer[string]
	prep := func(rule Rule[string]) *Prepared[string] {
		pr, err := p.Prepare(&rule)
		if err != nil {
			t.Fatal(err)
		}
		return pr
	}
	key := func(name string) Key { return Key{Created: t0, Namespace: "ns", Name: name} }
	exactHost := prep(r("exact", hosts("x.a.example.com"), prefix("/x")))
	table, err := Build([]*Prepared[string]{exactHost, prep(r("wild", hosts("*.example.com"), prefix("/w")))})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		remove []Key
		add    []*Prepared[string]
		want   map[string]string // request "host/path" → ref, "" for none
	}{
		{"a longer wildcard comes between", nil, []*Prepared[string]{prep(r("mid", hosts("*.a.example.com"), prefix("/m")))},
			map[string]string{"x.a.example.com/x": "exact", "x.a.example.com/m": "mid", "x.a.example.com/w": "wild", "y.a.example.com/w": "wild", "x.a.example.com/c": ""}},
		{"the catch-all comes", nil, []*Prepared[string]{prep(r("any", prefix("/c")))},
			map[string]string{"x.a.example.com/c": "any", "y.a.example.com/c": "any", "b.example.com/c": "any", "other.org/c": "any"}},
		{"the shorter wildcard goes", []Key{key("wild")}, nil,
			map[string]string{"x.a.example.com/w": "", "x.a.example.com/m": "mid", "y.a.example.com/c": "any", "b.example.com/m": ""}},
		{"the exact host moves to its own wildcard", []Key{key("exact")}, []*Prepared[string]{prep(r("exact", hosts("*.x.a.example.com"), prefix("/x")))},
			map[string]string{"x.a.example.com/x": "", "y.x.a.example.com/x": "exact", "y.x.a.example.com/m": "mid", "y.x.a.example.com/c": "any"}},
		{"the catch-all goes", []Key{key("any")}, nil,
			map[string]string{"y.x.a.example.com/c": "", "y.x.a.example.com/m": "mid", "other.org/c": ""}},
		{"the middle wildcard goes", []Key{key("mid")}, nil,
			map[string]string{"y.x.a.example.com/m": "", "y.x.a.example.com/x": "exact"}},
	}
	for _, step := range steps {
		next, err := table.Update(step.remove, step.add)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		for q, want := range step.want {
			host, path, _ := strings.Cut(q, "/")
			got, _ := next.Match(&Request{Host: host, Path: "/" + path})
			if got != want {
				t.Errorf("%s: %s gives %q, want %q", step.name, q, got, want)
			}
		}
		table = next
	}
}

// TestUpdateErrors: Update refuses what Build would refuse, with the same
// error, and a Key it does not hold; the table it started from still
// serves.
func TestUpdateErrors(t *testing.T) {
	// maxListLen rules on two hostnames' /x, and one on /y.
	rules := make([]Rule[string], maxListLen, maxListLen+1)
	for i := range rules {
		rules[i] = r("same", hosts("a.example.com", "b.example.com"), exact("/x"), index(i, 0))
	}
	rules = append(rules, r("other", hosts("a.example.com"), prefix("/y")))
	prepared, err := prepareAll(rules)
	if err != nil {
		t.Fatal(err)
	}
	table, err := Build(prepared)
	if err != nil {
		t.Fatal(err)
	}
	// One more on /x and the one on /y removed: two lists over the limit.
	more, err := prepareAll([]Rule[string]{r("same", hosts("a.example.com", "b.example.com"), exact("/x"), index(-1, 0))})
	if err != nil {
		t.Fatal(err)
	}
	other := Key{Created: t0, Namespace: "ns", Name: "other"}
	_, buildErr := Build(append(slices.Clone(prepared[:maxListLen]), more...))
	_, updateErr := table.Update([]Key{other}, more)
	if buildErr == nil || updateErr == nil || updateErr.Error() != buildErr.Error() {
		t.Fatalf("Update error:\n%v\nBuild error:\n%v", updateErr, buildErr)
	}
	want := `65536 rules on hostname "a.example.com" share the Exact path "/x", more than the limit of 65535: split them across hostnames or paths` +
		"\n" + `65536 rules on hostname "b.example.com" share the Exact path "/x", more than the limit of 65535: split them across hostnames or paths`
	if updateErr.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", updateErr, want)
	}
	// At the limit is fine, as for Build.
	if _, err := table.Update([]Key{other, rules[0].Key}, more); err != nil {
		t.Errorf("at the limit: %v", err)
	}

	if _, err := table.Update([]Key{{Namespace: "ns", Name: "nobody"}}, nil); !errors.Is(err, ErrUnknownKey) ||
		!strings.Contains(err.Error(), "route ns/nobody rule 0 match 0") {
		t.Errorf("removing an unknown key: %v", err)
	}
	if _, err := table.Update(nil, []*Prepared[string]{nil}); err == nil {
		t.Error("adding nil: no error")
	}
	var zero *Table[string]
	if _, err := zero.Update(nil, nil); err == nil {
		t.Error("Update of a nil table: no error")
	}
	if got, _ := table.Match(&Request{Host: "a.example.com", Path: "/y"}); got != "other" {
		t.Errorf("after failed updates, the table they started from answers %q", got)
	}
}

// TestUpdateBoundsDeadSpace: a long chain of Updates to one route keeps
// the table's arrays within twice what its live host entries need.
func TestUpdateBoundsDeadSpace(t *testing.T) {
	prepared, err := prepareAll(proxyShaped(200, ""))
	if err != nil {
		t.Fatal(err)
	}
	table, err := Build(prepared)
	if err != nil {
		t.Fatal(err)
	}
	versions := [2][]*Prepared[int]{}
	for v := range versions {
		if versions[v], err = prepareAll(proxyRoute(7, fmt.Sprint(v))); err != nil {
			t.Fatal(err)
		}
	}
	keys := []Key{versions[0][0].key(), versions[0][1].key()}
	for i := range 2000 {
		if table, err = table.Update(keys, versions[i%2]); err != nil {
			t.Fatal(err)
		}
		if len(table.nodes) > 2*table.src.nodes || len(table.cands) > 2*table.src.cands {
			t.Fatalf("update %d: %d nodes for %d live, %d candidates for %d", i, len(table.nodes), table.src.nodes, len(table.cands), table.src.cands)
		}
	}
}

// key returns the Key a prepared rule was made with, for tests.
func (p *Prepared[T]) key() Key {
	return Key{Created: time.Unix(p.id.sec, int64(p.id.nsec)), Namespace: p.id.namespace, Name: p.id.name, Rule: p.id.rule, Match: p.id.match}
}

// TestUpdateNothing returns the same table.
func TestUpdateNothing(t *testing.T) {
	table, err := Compile([]Rule[string]{r("a")})
	if err != nil {
		t.Fatal(err)
	}
	if next, err := table.Update(nil, nil); err != nil || next != table {
		t.Errorf("Update(nil, nil) = %p, %v; want the table itself", next, err)
	}
}

// TestHostTableEdits checks set, del and growth against a plain map, long
// names included, and that a clone is changed apart from its original.
func TestHostTableEdits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ht := newHostTable(3)
	want := map[string]hostRef{}
	name := func() string {
		n := fmt.Sprintf("h%d.example.com", rng.IntN(400))
		if rng.IntN(10) == 0 {
			n = strings.Repeat("long", 10) + n // past inlineName
		}
		return n
	}
	for step := range 3000 {
		if step%500 == 0 {
			ht.done()
			orig, origWant := ht, maps.Clone(want)
			ht = orig.edit()
			defer func() {
				for n, ref := range origWant {
					if got, ok := get(&orig, n); !ok || got != ref {
						t.Errorf("a clone's edits reached its original: %s gives %v %v, want %v", n, got, ok, ref)
					}
				}
			}()
		}
		n := name()
		if rng.IntN(3) == 0 {
			ht.del(n)
			delete(want, n)
		} else {
			ref := hostRef{root: uint32(step), next: -1}
			ht.set(n, ref)
			want[n] = ref
		}
		if ht.count != len(want) || 2*(ht.count-len(ht.long)) > int(ht.mask+1) {
			t.Fatalf("step %d: count %d in %d slots, want %d names", step, ht.count, ht.mask+1, len(want))
		}
	}
	for n, ref := range want {
		if got, ok := get(&ht, n); !ok || got != ref {
			t.Errorf("%s gives %v %v, want %v", n, got, ok, ref)
		}
	}
	for i := range 400 {
		n := fmt.Sprintf("h%d.example.com", i)
		if _, ok := get(&ht, n); ok != (want[n] != hostRef{}) {
			t.Errorf("%s: found %v", n, ok)
		}
	}
}

// TestUpdateRedoesOnlyChangedHosts: an Update lays out again only the host
// entries whose rules change; every other one keeps its record and its
// place in the arrays, shared with the table it came from. A host a route
// left (still named by the route index) is not one of them.
func TestUpdateRedoesOnlyChangedHosts(t *testing.T) {
	var p Preparer[string]
	prep := func(rules ...Rule[string]) []*Prepared[string] {
		var out []*Prepared[string]
		for i := range rules {
			pr, err := p.Prepare(&rules[i])
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, pr)
		}
		return out
	}
	var rules []*Prepared[string]
	for i := range 50 {
		rules = append(rules, prep(r(fmt.Sprint("r", i), hosts(fmt.Sprintf("h%d.example.com", i)), prefix("/a"), index(0, 0)),
			r(fmt.Sprint("r", i), hosts(fmt.Sprintf("h%d.example.com", i)), exact("/b"), index(1, 0)))...)
	}
	rules = append(rules, prep(r("any", prefix("/any")), r("wild", hosts("*.example.com"), prefix("/w")))...)
	table, err := Build(rules)
	if err != nil {
		t.Fatal(err)
	}
	keyOf := func(name string, rule int) Key { return Key{Created: t0, Namespace: "ns", Name: name, Rule: rule} }
	steps := []struct {
		name    string
		remove  []Key
		add     []*Prepared[string]
		changed []string // hosts whose entries are laid out again
	}{
		{"a route's match changes", []Key{keyOf("r7", 1)}, prep(r("r7", hosts("h7.example.com"), exact("/c"), index(1, 0))),
			[]string{"h7.example.com"}},
		{"a match moves to another host", []Key{keyOf("r7", 0)}, prep(r("r7", hosts("h8.example.com"), prefix("/a7"), index(0, 0))),
			[]string{"h7.example.com", "h8.example.com"}},
		{"the route's other match changes; the host it left is not touched", []Key{keyOf("r7", 0)},
			prep(r("r7", hosts("h8.example.com"), prefix("/a77"), index(0, 0))), []string{"h8.example.com"}},
	}
	for _, step := range steps {
		next, err := table.Update(step.remove, step.add)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		for _, h := range table.src.byEntry() {
			if h == nil {
				continue
			}
			nh := next.src.host(h.name)
			redone := nh != h
			if want := slices.Contains(step.changed, h.name); redone != want {
				t.Errorf("%s: host %q laid out again: %v, want %v", step.name, h.name, redone, want)
			}
			if old, now := *table.hosts.entries.get(uint64(h.entry)), *next.hosts.entries.get(uint64(h.entry)); !redone && old != now {
				t.Errorf("%s: host %q moved from %v to %v", step.name, h.name, old, now)
			}
		}
		table = next
	}
}

// TestUpdateRoutesSpelledAlike: routes whose namespace and name join to
// the same "{namespace}/{name}" share an entry of the route index; a Key
// of one removes its rules only.
func TestUpdateRoutesSpelledAlike(t *testing.T) {
	table, err := Compile([]Rule[string]{
		r("a/b c", named("a/b", "c"), hosts("one.example.com")),
		r("a b/c", named("a", "b/c"), hosts("two.example.com")),
	})
	if err != nil {
		t.Fatal(err)
	}
	next, err := table.Update([]Key{{Created: t0, Namespace: "a", Name: "b/c"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]string{"one.example.com": "a/b c", "two.example.com": ""} {
		if got, _ := next.Match(&Request{Host: host, Path: "/"}); got != want {
			t.Errorf("%s: got %q, want %q", host, got, want)
		}
	}
	if _, err := next.Update([]Key{{Created: t0, Namespace: "a", Name: "b/c"}}, nil); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("removing it again: %v", err)
	}
	if next, err = next.Update([]Key{{Created: t0, Namespace: "a/b", Name: "c"}}, nil); err != nil || next.Len() != 0 || next.src.routes.len() != 0 {
		t.Errorf("removing the other: %v, %d rules, %d routes indexed", err, next.Len(), next.src.routes.len())
	}
}

// TestUpdateWhileMatching: requests go on matching against a table while
// two goroutines update it at once, so that one extends its arrays in
// place and the other copies them. Run with -race, this shows that
// neither writes to memory the table reads.
func TestUpdateWhileMatching(t *testing.T) {
	set := generate(300, 256, 5)
	prepared, err := prepareAll(set.rules)
	if err != nil {
		t.Fatal(err)
	}
	built, err := Build(prepared)
	if err != nil {
		t.Fatal(err)
	}
	// A table Build makes has no room past its arrays; one Update makes
	// has, and that room is what the two updates below must not share.
	extra, err := prepareAll([]Rule[int]{{Hostnames: []string{"extra.example.com"}, Path: EveryPath, Ref: -2}})
	if err != nil {
		t.Fatal(err)
	}
	table, err := built.Update(nil, extra)
	if err != nil {
		t.Fatal(err)
	}
	if cap(table.nodes) == len(table.nodes) {
		t.Fatal("the updated table has no room to grow into")
	}
	set.rules, prepared = append(set.rules, Rule[int]{Hostnames: []string{"extra.example.com"}, Path: EveryPath, Ref: -2}), append(prepared, extra...)
	want := answers(table, set.requests)
	stop := make(chan struct{})
	matched := make(chan error, 2)
	for range 2 {
		go func() {
			for {
				select {
				case <-stop:
					matched <- nil
					return
				default:
				}
				if got := answers(table, set.requests); !slices.Equal(got, want) {
					matched <- errors.New("the table answered differently while being updated")
					return
				}
			}
		}()
	}
	updated := make(chan error, 2)
	for g := range 2 {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			m := model{rules: set.rules, prepared: prepared}
			pool := generate(30, 0, uint64(100+g)).rules
			ref := 1<<20 + g<<16
			next := table
			for range 20 {
				remove, add := randomChange(m, pool, rng, &ref)
				addPrepared, err := prepareAll(add)
				if err != nil {
					updated <- err
					return
				}
				if next, err = next.Update(remove, addPrepared); err != nil {
					updated <- err
					return
				}
				m = m.update(remove, add, addPrepared)
			}
			built, err := Build(m.prepared)
			if err != nil {
				updated <- err
				return
			}
			if !slices.Equal(answers(next, set.requests), answers(built, set.requests)) {
				updated <- fmt.Errorf("goroutine %d: the updated table answers unlike Build", g)
				return
			}
			updated <- nil
		}()
	}
	for range 2 {
		if err := <-updated; err != nil {
			t.Error(err)
		}
	}
	close(stop)
	for range 2 {
		if err := <-matched; err != nil {
			t.Error(err)
		}
	}
}
