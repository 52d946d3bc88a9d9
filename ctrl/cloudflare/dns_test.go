package cloudflare

import (
	"slices"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

func TestPlanDNS(t *testing.T) {
	opts := DNSOptions{Owner: "prod", TunnelID: "t1", Proxied: true}
	comment := "managed by tunnelgate (owner prod)"
	ourTXT := func(id, host, tunnel string) Record {
		return Record{ID: id, Type: "TXT", Name: ownershipName(host), Content: ownershipContent("prod", tunnel), Comment: comment}
	}
	ourCNAME := func(id, host string) Record {
		return Record{ID: id, Type: "CNAME", Name: host, Content: "t1.cfargotunnel.com", Proxied: true, Comment: comment}
	}
	type want struct {
		deletes, updates, creates []string // "TYPE name"
		states                    map[string]string
	}
	cases := []struct {
		name     string
		hosts    []string
		records  []Record
		takeover bool
		want     want
	}{
		{"new hostnames get a CNAME and an ownership record", []string{"a.example.com", "*.w.example.com"}, nil, false, want{
			creates: []string{"CNAME *.w.example.com", "TXT _tunnelgate-wildcard.w.example.com", "TXT _tunnelgate.a.example.com", "CNAME a.example.com"},
			states:  map[string]string{"a.example.com": "ready", "*.w.example.com": "ready"}}},
		{"steady state changes nothing", []string{"a.example.com"}, []Record{ourCNAME("1", "a.example.com"), ourTXT("2", "a.example.com", "t1")}, false, want{
			states: map[string]string{"a.example.com": "ready"}}},
		{"a new tunnel rewrites our records", []string{"a.example.com"}, []Record{
			{ID: "1", Type: "CNAME", Name: "a.example.com", Content: "t0.cfargotunnel.com", Proxied: true, Comment: comment}, ourTXT("2", "a.example.com", "t0")}, false, want{
			updates: []string{"TXT _tunnelgate.a.example.com", "CNAME a.example.com"},
			states:  map[string]string{"a.example.com": "ready"}}},
		{"a foreign record is left alone and reported", []string{"a.example.com"}, []Record{{ID: "9", Type: "A", Name: "a.example.com", Content: "192.0.2.1"}}, false, want{
			states: map[string]string{"a.example.com": translate.DNSReasonForeignRecord + ":A a.example.com → 192.0.2.1"}}},
		{"an unowned CNAME is foreign too", []string{"a.example.com"}, []Record{{ID: "9", Type: "CNAME", Name: "a.example.com", Content: "elsewhere.example.net"}}, false, want{
			states: map[string]string{"a.example.com": translate.DNSReasonForeignRecord}}},
		{"takeover replaces foreign records", []string{"a.example.com"}, []Record{
			{ID: "8", Type: "A", Name: "a.example.com", Content: "192.0.2.1"}, {ID: "9", Type: "CNAME", Name: "a.example.com", Content: "elsewhere.example.net"}}, true, want{
			deletes: []string{"A a.example.com"}, updates: []string{"CNAME a.example.com"}, creates: []string{"TXT _tunnelgate.a.example.com"},
			states: map[string]string{"a.example.com": "ready"}}},
		{"another owner's hostname is never touched, even with takeover", []string{"a.example.com"}, []Record{
			{ID: "1", Type: "CNAME", Name: "a.example.com", Content: "t9.cfargotunnel.com", Proxied: true},
			{ID: "2", Type: "TXT", Name: "_tunnelgate.a.example.com", Content: ownershipContent("staging", "t9")}}, true, want{
			states: map[string]string{"a.example.com": translate.DNSReasonOwnedByOther + `:"staging"`}}},
		{"removed hostnames lose only our records", []string{}, []Record{
			ourCNAME("1", "gone.example.com"), ourTXT("2", "gone.example.com", "t1"),
			{ID: "3", Type: "CNAME", Name: "theirs.example.com", Content: "t9.cfargotunnel.com"},
			{ID: "4", Type: "TXT", Name: "_tunnelgate.theirs.example.com", Content: ownershipContent("staging", "t9")},
			{ID: "5", Type: "TXT", Name: "_tunnelgate.other.example.com", Content: `"v=spf1 -all"`}}, false, want{
			deletes: []string{"TXT _tunnelgate.gone.example.com", "CNAME gone.example.com"}, states: map[string]string{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			o.Takeover = tc.takeover
			p := PlanDNS(tc.hosts, tc.records, o)
			check := func(what string, got []Record, want []string) {
				t.Helper()
				var names []string
				for _, r := range got {
					names = append(names, r.Type+" "+r.Name)
				}
				if strings.Join(names, "|") != strings.Join(want, "|") {
					t.Errorf("%s: got %v, want %v", what, names, want)
				}
			}
			check("deletes", p.Deletes, tc.want.deletes)
			check("updates", p.Updates, tc.want.updates)
			check("creates", p.Creates, tc.want.creates)
			if len(p.States) != len(tc.want.states) {
				t.Errorf("states %+v, want %v", p.States, tc.want.states)
			}
			for h, w := range tc.want.states {
				st, ok := p.States[h]
				switch {
				case !ok:
					t.Errorf("%s: no state", h)
				case w == "ready":
					if !st.Ready {
						t.Errorf("%s: %+v, want ready", h, st)
					}
				default:
					reason, inMsg, _ := strings.Cut(w, ":")
					if st.Ready || st.Reason != reason || !strings.Contains(st.Message, inMsg) {
						t.Errorf("%s: %+v, want %s mentioning %q", h, st, reason, inMsg)
					}
				}
			}
			for _, r := range p.Updates {
				if r.ID == "" {
					t.Errorf("update without an ID: %+v", r)
				}
			}
			for _, r := range p.Creates {
				if r.Type == "CNAME" && (r.Content != "t1.cfargotunnel.com" || !r.Proxied) {
					t.Errorf("CNAME %+v, want proxied to the tunnel", r)
				}
			}
		})
	}
}

func TestOwnershipRoundTrip(t *testing.T) {
	for _, h := range []string{"a.example.com", "*.example.com", "x.y.example.com"} {
		back, ok := hostnameOfOwnership(ownershipName(h))
		if !ok || back != h {
			t.Errorf("%s → %s → %s", h, ownershipName(h), back)
		}
	}
	for _, c := range []string{ownershipContent("o", "t"), strings.Trim(ownershipContent("o", "t"), `"`)} {
		if own, ok := parseOwnership(c); !ok || own.owner != "o" || own.tunnel != "t" {
			t.Errorf("parse %s: %+v %v", c, own, ok)
		}
	}
	for _, c := range []string{`"v=spf1 -all"`, `"heritage=external-dns,owner=o"`, `"heritage=tunnelgate"`} {
		if _, ok := parseOwnership(c); ok {
			t.Errorf("%s taken as ours", c)
		}
	}
}

// The records of a plane whose Gateway is gone go with the class's sync;
// those of a live plane, of another class and of an owner that merely
// starts with the class's name stay; without LivePlanes nothing of a
// plane's is touched.
func TestPlanDNSRemovesDeletedPlanes(t *testing.T) {
	plane := func(owner, host, id string) []Record {
		return []Record{
			{ID: id + "c", Type: "CNAME", Name: host, Content: "tp.cfargotunnel.com", Proxied: true},
			{ID: id + "t", Type: "TXT", Name: ownershipName(host), Content: ownershipContent(owner, "tp")},
		}
	}
	var records []Record
	records = append(records, plane(PlaneOwner("prod", "team-a", "gone"), "gone.example.com", "1")...)
	records = append(records, plane(PlaneOwner("prod", "team-a", "live"), "live.example.com", "2")...)
	records = append(records, plane(PlaneOwner("staging", "team-a", "gone"), "other.example.com", "3")...)
	records = append(records, plane("production/team-a/gone", "prefix.example.com", "4")...)
	o := DNSOptions{Owner: "prod", TunnelID: "t1", Proxied: true, LivePlanes: []string{PlaneOwner("prod", "team-a", "live")}}
	var got []string
	for _, r := range PlanDNS(nil, records, o).Deletes {
		got = append(got, r.Type+" "+r.Name)
	}
	if want := "CNAME gone.example.com,TXT _tunnelgate.gone.example.com"; strings.Join(slices.Sorted(slices.Values(got)), ",") != want {
		t.Errorf("deletes %v, want %s", got, want)
	}
	o.LivePlanes = nil
	if p := PlanDNS(nil, records, o); !p.Empty() {
		t.Errorf("without LivePlanes: %+v, want nothing", p)
	}

	// A hostname the class now wants, from a plane that is gone: the
	// class takes its records over.
	o.LivePlanes = []string{}
	p := PlanDNS([]string{"gone.example.com"}, records, o)
	var updates []string
	for _, r := range p.Updates {
		updates = append(updates, r.Type+" "+r.Name+" "+r.Content)
	}
	if len(p.Creates) != 0 || !slices.Contains(updates, "CNAME gone.example.com t1.cfargotunnel.com") ||
		!slices.Contains(updates, "TXT _tunnelgate.gone.example.com "+ownershipContent("prod", "t1")) || !p.States["gone.example.com"].Ready {
		t.Errorf("a gone plane's hostname wanted by the class: updates %v, creates %v, states %v", updates, p.Creates, p.States)
	}
	// A live plane's hostname stays the plane's.
	p = PlanDNS([]string{"live.example.com"}, records, DNSOptions{Owner: "prod", TunnelID: "t1", LivePlanes: []string{PlaneOwner("prod", "team-a", "live")}})
	if st := p.States["live.example.com"]; st.Ready || st.Reason != translate.DNSReasonOwnedByOther {
		t.Errorf("a live plane's hostname wanted by the class: %+v", st)
	}
}

// A load balanced hostname's DNS is its load balancer's: no CNAME for
// it, ours removed with its ownership record, and a record not ours left
// alone (takeover or not) and reported.
func TestPlanDNSLoadBalanced(t *testing.T) {
	comment := "managed by tunnelgate (owner prod)"
	records := []Record{
		{ID: "1", Type: "CNAME", Name: "ours.example.com", Content: "t1.cfargotunnel.com", Proxied: true, Comment: comment},
		{ID: "2", Type: "TXT", Name: ownershipName("ours.example.com"), Content: ownershipContent("prod", "t1"), Comment: comment},
		{ID: "3", Type: "A", Name: "foreign.example.com", Content: "192.0.2.1"},
		{ID: "4", Type: "CNAME", Name: "other.example.com", Content: "t9.cfargotunnel.com", Proxied: true},
		{ID: "5", Type: "TXT", Name: ownershipName("other.example.com"), Content: ownershipContent("staging", "t9")},
	}
	for _, takeover := range []bool{false, true} {
		o := DNSOptions{Owner: "prod", TunnelID: "t1", Proxied: true, Takeover: takeover,
			LoadBalanced: []string{"ours.example.com", "foreign.example.com", "other.example.com", "new.example.com"}}
		p := PlanDNS([]string{"ours.example.com", "foreign.example.com", "other.example.com", "new.example.com", "plain.example.com"}, records, o)
		var deletes, creates []string
		for _, r := range p.Deletes {
			deletes = append(deletes, r.ID)
		}
		for _, r := range p.Creates {
			creates = append(creates, r.Type+" "+r.Name)
		}
		if !slices.Equal(deletes, []string{"2", "1"}) || len(p.Updates) != 0 ||
			!slices.Equal(creates, []string{"TXT _tunnelgate.plain.example.com", "CNAME plain.example.com"}) {
			t.Errorf("takeover %v: deletes %v, updates %v, creates %v", takeover, deletes, p.Updates, creates)
		}
		for h, want := range map[string]string{"ours.example.com": "", "new.example.com": "", "plain.example.com": "",
			"foreign.example.com": translate.DNSReasonForeignRecord, "other.example.com": translate.DNSReasonOwnedByOther} {
			st := p.States[h]
			if st.Ready != (want == "") || st.Reason != want || want != "" && !strings.Contains(st.Message, "load balance") ||
				st.LoadBalanced != (h != "plain.example.com") {
				t.Errorf("takeover %v: %s: %+v, want reason %q", takeover, h, st, want)
			}
		}
	}
}

// TestPlanDNSUnmanaged: a hostname a DNSPolicy leaves to others gets no
// record; the pair we own there goes (a deleted plane's too), and any
// other record stays, takeover or not. A hostname also load balanced is
// the load balancer's.
func TestPlanDNSUnmanaged(t *testing.T) {
	comment := "managed by tunnelgate (owner prod)"
	records := []Record{
		{ID: "1", Type: "CNAME", Name: "ours.example.com", Content: "t1.cfargotunnel.com", Proxied: true, Comment: comment},
		{ID: "2", Type: "TXT", Name: ownershipName("ours.example.com"), Content: ownershipContent("prod", "t1"), Comment: comment},
		{ID: "3", Type: "A", Name: "foreign.example.com", Content: "192.0.2.1"},
		{ID: "4", Type: "CNAME", Name: "bare.example.com", Content: "t1.cfargotunnel.com", Proxied: true},
		{ID: "5", Type: "CNAME", Name: "other.example.com", Content: "t9.cfargotunnel.com", Proxied: true},
		{ID: "6", Type: "TXT", Name: ownershipName("other.example.com"), Content: ownershipContent("staging", "t9")},
		{ID: "7", Type: "CNAME", Name: "gone.example.com", Content: "t7.cfargotunnel.com", Proxied: true},
		{ID: "8", Type: "TXT", Name: ownershipName("gone.example.com"), Content: ownershipContent("prod/apps/gone", "t7")},
		// external-dns took the name over, and our ownership record was
		// left behind: it goes, their record stays.
		{ID: "9", Type: "A", Name: "moved.example.com", Content: "192.0.2.9"},
		{ID: "10", Type: "TXT", Name: ownershipName("moved.example.com"), Content: ownershipContent("prod", "t1")},
		{ID: "11", Type: "CNAME", Name: "*.wild.example.com", Content: "t1.cfargotunnel.com", Proxied: true, Comment: comment},
		{ID: "12", Type: "TXT", Name: ownershipName("*.wild.example.com"), Content: ownershipContent("prod", "t1"), Comment: comment},
	}
	unmanaged := []string{"ours.example.com", "foreign.example.com", "bare.example.com", "other.example.com",
		"gone.example.com", "moved.example.com", "*.wild.example.com", "new.example.com", "lb.example.com"}
	for _, takeover := range []bool{false, true} {
		o := DNSOptions{Owner: "prod", TunnelID: "t1", Proxied: true, Takeover: takeover, LivePlanes: []string{},
			Unmanaged: unmanaged, LoadBalanced: []string{"lb.example.com"}}
		p := PlanDNS(append(slices.Clone(unmanaged), "plain.example.com"), records, o)
		var deletes, creates []string
		for _, r := range p.Deletes {
			deletes = append(deletes, r.ID)
		}
		for _, r := range p.Creates {
			creates = append(creates, r.Type+" "+r.Name)
		}
		slices.Sort(deletes)
		if !slices.Equal(deletes, []string{"1", "10", "11", "12", "2", "7", "8"}) || len(p.Updates) != 0 ||
			!slices.Equal(creates, []string{"TXT _tunnelgate.plain.example.com", "CNAME plain.example.com"}) {
			t.Errorf("takeover %v: deletes %v, updates %v, creates %v", takeover, deletes, p.Updates, creates)
		}
		for _, h := range unmanaged {
			st := p.States[h]
			lb := h == "lb.example.com"
			if !st.Ready || st.Unmanaged == lb || st.LoadBalanced != lb || st.Reason != "" {
				t.Errorf("takeover %v: %s: %+v", takeover, h, st)
			}
		}
		if st := p.States["plain.example.com"]; !st.Ready || st.Unmanaged {
			t.Errorf("takeover %v: plain.example.com: %+v", takeover, st)
		}
		// Once applied, the next pass changes nothing.
		var left []Record
		for _, r := range records {
			if !slices.Contains(deletes, r.ID) {
				left = append(left, r)
			}
		}
		if again := PlanDNS(unmanaged, left, o); !again.Empty() {
			t.Errorf("takeover %v: second pass %+v", takeover, again)
		}
	}
}
