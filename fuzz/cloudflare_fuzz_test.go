package fuzz

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/ctrl/cloudflare"
	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// FuzzTunnelDocument feeds SameDocument whatever Cloudflare might answer
// for a tunnel's configuration. It must never panic; the document we
// build must equal itself after a JSON round trip (or every sync would
// write it again); and a remote document taken as the same must have as
// many rules, in order, as ours (rule order is routing).
//
// Seeds: the documents of ctrl/cloudflare's tests, with and without the
// defaults Cloudflare echoes, and broken JSON.
func FuzzTunnelDocument(f *testing.F) {
	f.Add([]byte(`{"ingress":[{"hostname":"app.example.com","service":"http://localhost:8080"},{"service":"http_status:404"}]}`), "app.example.com")
	f.Add([]byte(`{"ingress":[{"hostname":"app.example.com","service":"http://localhost:8080","originRequest":{}},{"service":"http_status:404","originRequest":{}}],"warp-routing":{"enabled":false}}`), "app.example.com")
	f.Add([]byte(`{"ingress":[{"hostname":"g.example.com","service":"https://localhost:8443","originRequest":{"http2Origin":true}},{"service":"http_status:404"}]}`), "grpc:g.example.com,*.example.com")
	f.Add([]byte(`{"ingress":[{"service":"http_status:404"}]}`), "")
	f.Add([]byte(`{"ingress":null}`), "a.example.com")
	f.Add([]byte(`[1,2]`), "a.example.com")
	f.Add([]byte(`{"ingress":[{},{}]`), "x")
	f.Fuzz(func(t *testing.T, remote []byte, hosts string) {
		want := cloudflare.BuildDocument(fuzzHostnames(hosts), nil)
		if n := len(want.Ingress); n == 0 || want.Ingress[n-1].Hostname != "" || want.Ingress[n-1].Service != "http_status:404" {
			t.Fatalf("document %+v does not end with the catch-all", want)
		}
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if !cloudflare.SameDocument(b, want) {
			t.Fatalf("our own document %s is not the same as itself", b)
		}
		if cloudflare.SameDocument(remote, want) {
			var got struct {
				Ingress []json.RawMessage `json:"ingress"`
			}
			if err := json.Unmarshal(remote, &got); err != nil || len(got.Ingress) != len(want.Ingress) {
				t.Fatalf("%s taken as the same as %s (%v)", remote, b, err)
			}
		}
	})
}

// fuzzHostnames reads "grpc:a.example.com,b.example.com" as distinct
// hostnames, as translate would publish them.
func fuzzHostnames(s string) []translate.Hostname {
	var out []translate.Hostname
	seen := map[string]bool{}
	for _, h := range strings.Split(s, ",") {
		name, grpc := strings.CutPrefix(h, "grpc:")
		name = fuzzHost(name)
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, translate.Hostname{Name: name, GRPC: grpc, HTTP: !grpc})
	}
	return out
}

// fuzzHost keeps what a Gateway API hostname may hold: lower-case letters,
// digits, '-', '.' and a leading "*.".
func fuzzHost(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	wild := strings.HasPrefix(s, "*.")
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return -1
	}, s)
	s = strings.Trim(s, ".")
	if s == "" {
		return ""
	}
	if wild {
		return "*." + s
	}
	return s
}

// FuzzPlanDNS plans a zone's records from any record set Cloudflare might
// list (one record per line: "TYPE name content"), and applies the plan
// to that set. It must never panic, and:
//   - it touches only records that exist, and only ours (an ownership
//     record with our owner ID, or a record on a hostname we own), or,
//     with takeover, records on a wanted hostname no other owner holds;
//   - every wanted hostname gets a state, and a Ready one ends with
//     exactly one proxied CNAME to the tunnel and our ownership record;
//   - planning again on the result changes nothing.
//
// Seeds: foreign records, another owner's records, our records for a
// removed hostname, an old tunnel, duplicates.
func FuzzPlanDNS(f *testing.F) {
	ours := `"heritage=tunnelgate,owner=prod,tunnel=t1"`
	f.Add("", "a.example.com,*.w.example.com", false)
	f.Add("A a.example.com 192.0.2.1", "a.example.com", false)
	f.Add("A a.example.com 192.0.2.1\nCNAME a.example.com x.example.net", "a.example.com", true)
	f.Add("CNAME a.example.com t9.cfargotunnel.com\nTXT _tunnelgate.a.example.com \"heritage=tunnelgate,owner=staging,tunnel=t9\"", "a.example.com", true)
	f.Add("CNAME gone.example.com t1.cfargotunnel.com\nTXT _tunnelgate.gone.example.com "+ours, "a.example.com", false)
	f.Add("CNAME a.example.com t0.cfargotunnel.com\nTXT _tunnelgate.a.example.com \"heritage=tunnelgate,owner=prod,tunnel=t0\"", "a.example.com", false)
	f.Add("CNAME a.example.com t1.cfargotunnel.com\nCNAME a.example.com t1.cfargotunnel.com\nTXT _tunnelgate.a.example.com "+ours+"\nTXT _tunnelgate.a.example.com "+ours, "a.example.com", false)
	f.Add("TXT _tunnelgate-wildcard.example.com "+ours+"\nCNAME *.example.com t1.cfargotunnel.com", "", false)
	f.Fuzz(func(t *testing.T, listing, wantList string, takeover bool) {
		records := fuzzRecords(listing)
		var want []string
		for _, h := range fuzzHostnames(wantList) {
			want = append(want, h.Name)
		}
		o := cloudflare.DNSOptions{Owner: "prod", TunnelID: "t1", Proxied: true, Takeover: takeover}
		plan := cloudflare.PlanDNS(want, records, o)

		byID := map[string]cloudflare.Record{}
		for _, r := range records {
			byID[r.ID] = r
		}
		ownedHosts, otherHosts := map[string]bool{}, map[string]bool{}
		for _, r := range records {
			if r.Type != "TXT" {
				continue
			}
			if h, ok := strings.CutPrefix(r.Name, "_tunnelgate-wildcard."); ok {
				r.Name = "_tunnelgate.*." + h
			}
			h, ok := strings.CutPrefix(r.Name, "_tunnelgate.")
			switch {
			case !ok || !strings.Contains(r.Content, "heritage=tunnelgate"):
			case strings.Contains(r.Content, "owner=prod,"):
				ownedHosts[h] = true
			default:
				otherHosts[h] = true
			}
		}
		mayTouch := func(r cloudflare.Record) bool {
			if r.Type == "TXT" && strings.Contains(r.Content, "heritage=tunnelgate") && strings.Contains(r.Content, "owner=prod,") {
				return true
			}
			if ownedHosts[r.Name] {
				return true
			}
			return takeover && slices.Contains(want, r.Name) && !otherHosts[r.Name]
		}
		for _, r := range append(slices.Clone(plan.Deletes), plan.Updates...) {
			old, ok := byID[r.ID]
			if !ok {
				t.Fatalf("plan touches record %q, which does not exist", r.ID)
			}
			if !mayTouch(old) {
				t.Fatalf("plan touches %+v, which is not ours (takeover %v)", old, takeover)
			}
		}

		after := applyPlan(records, plan)
		for _, h := range want {
			st, ok := plan.States[h]
			if !ok {
				t.Fatalf("no state for %s", h)
			}
			if !st.Ready {
				continue
			}
			var cnames, txts int
			for _, r := range after {
				switch {
				case r.Name == h && r.Type == "CNAME" && r.Content == "t1.cfargotunnel.com" && r.Proxied:
					cnames++
				case r.Name == h:
					t.Fatalf("%s is Ready but also holds %+v", h, r)
				case r.Type == "TXT" && strings.Contains(r.Content, "owner=prod,tunnel=t1"):
					if n := strings.TrimPrefix(strings.Replace(r.Name, "_tunnelgate-wildcard.", "_tunnelgate.*.", 1), "_tunnelgate."); n == h {
						txts++
					}
				}
			}
			if cnames != 1 || txts < 1 {
				t.Fatalf("%s is Ready with %d CNAMEs to the tunnel and %d ownership records:\n%v", h, cnames, txts, after)
			}
		}
		if again := cloudflare.PlanDNS(want, after, o); !again.Empty() {
			t.Fatalf("a second plan changes more:\nfirst %+v\nsecond %+v", plan, again)
		}
	})
}

// fuzzRecords reads "TYPE name content" lines, as Cloudflare lists them
// (lower-case names), numbering the records.
func fuzzRecords(s string) []cloudflare.Record {
	var out []cloudflare.Record
	for i, line := range strings.Split(s, "\n") {
		typ, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		name, content, _ := strings.Cut(rest, " ")
		if typ == "" || name == "" {
			continue
		}
		r := cloudflare.Record{ID: fmt.Sprint("r", i), Type: strings.ToUpper(typ), Name: strings.ToLower(name), Content: content}
		r.Proxied = r.Type == "CNAME"
		out = append(out, r)
	}
	return out
}

// applyPlan does what Cloudflare's batch would: deletes, updates, creates.
func applyPlan(records []cloudflare.Record, p cloudflare.DNSPlan) []cloudflare.Record {
	var out []cloudflare.Record
	for _, r := range records {
		if slices.ContainsFunc(p.Deletes, func(d cloudflare.Record) bool { return d.ID == r.ID }) {
			continue
		}
		if i := slices.IndexFunc(p.Updates, func(u cloudflare.Record) bool { return u.ID == r.ID }); i >= 0 {
			r = p.Updates[i]
		}
		out = append(out, r)
	}
	for i, c := range p.Creates {
		c.ID = fmt.Sprint("new", i)
		out = append(out, c)
	}
	return out
}
