package cffake_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/cloudflare/cloudflare-go/v7"
	"github.com/cloudflare/cloudflare-go/v7/dns"
	"github.com/cloudflare/cloudflare-go/v7/option"

	"github.com/tunnelgate/tunnelgate/test/cffake"
)

var zoneF = cloudflare.F(zoneID)

func cname(name, target string, proxied bool) dns.CNAMERecordParam {
	return dns.CNAMERecordParam{Name: cloudflare.F(name), Type: cloudflare.F(dns.CNAMERecordTypeCNAME),
		Content: cloudflare.F(target), Proxied: cloudflare.F(proxied), TTL: cloudflare.F(dns.TTL1)}
}

func txt(name, content string) dns.TXTRecordParam {
	return dns.TXTRecordParam{Name: cloudflare.F(name), Type: cloudflare.F(dns.TXTRecordTypeTXT),
		Content: cloudflare.F(content), TTL: cloudflare.F(dns.TTL1)}
}

func aRec(name, ip string) dns.ARecordParam {
	return dns.ARecordParam{Name: cloudflare.F(name), Type: cloudflare.F(dns.ARecordTypeA),
		Content: cloudflare.F(ip), TTL: cloudflare.F(dns.TTL(300))}
}

func create(c *cloudflare.Client, body dns.RecordNewParamsBodyUnion) (*dns.RecordResponse, error) {
	return c.DNS.Records.New(context.Background(), dns.RecordNewParams{ZoneID: zoneF, Body: body})
}

func TestRecordCRUD(t *testing.T) {
	f, c := setup(t)
	ctx := context.Background()
	target := tunnelID + ".cfargotunnel.com"

	rec, err := create(c, cname("App", target+".", true))
	check(t, err)
	if rec.Name != "app.example.com" || rec.Type != "CNAME" || rec.Content != target || !rec.Proxied || !rec.Proxiable || rec.TTL != 1 {
		t.Fatalf("created = %s", rec.JSON.RawJSON())
	}

	got, err := c.DNS.Records.Get(ctx, rec.ID, dns.RecordGetParams{ZoneID: zoneF})
	check(t, err)
	if got.ID != rec.ID || got.Content != target {
		t.Fatalf("get = %s", got.JSON.RawJSON())
	}

	// PUT overwrites: the comment is set, proxied falls back to false.
	put := cname("app.example.com", "other.example.net", false)
	put.Comment = cloudflare.F("owned by gw")
	upd, err := c.DNS.Records.Update(ctx, rec.ID, dns.RecordUpdateParams{ZoneID: zoneF, Body: put})
	check(t, err)
	if upd.Content != "other.example.net" || upd.Proxied || upd.Comment != "owned by gw" {
		t.Fatalf("update = %s", upd.JSON.RawJSON())
	}

	// PATCH changes only what it sends.
	ed, err := c.DNS.Records.Edit(ctx, rec.ID, dns.RecordEditParams{ZoneID: zoneF,
		Body: dns.CNAMERecordParam{Proxied: cloudflare.F(true)}})
	check(t, err)
	if ed.Content != "other.example.net" || !ed.Proxied || ed.Comment != "owned by gw" || ed.Name != "app.example.com" {
		t.Fatalf("edit = %s", ed.JSON.RawJSON())
	}

	want := []cffake.Record{{ID: rec.ID, Type: "CNAME", Name: "app.example.com", Content: "other.example.net",
		Proxied: true, TTL: 1, Comment: "owned by gw"}}
	if got := f.Records(zoneID); !slices.Equal(got, want) {
		t.Fatalf("Records = %+v, want %+v", got, want)
	}

	del, err := c.DNS.Records.Delete(ctx, rec.ID, dns.RecordDeleteParams{ZoneID: zoneF})
	check(t, err)
	if del.ID != rec.ID {
		t.Fatalf("delete = %s", del.JSON.RawJSON())
	}
	_, err = c.DNS.Records.Get(ctx, rec.ID, dns.RecordGetParams{ZoneID: zoneF})
	apiErr(t, err, http.StatusNotFound, 81044)
	_, err = c.DNS.Records.Delete(ctx, rec.ID, dns.RecordDeleteParams{ZoneID: zoneF})
	apiErr(t, err, http.StatusNotFound, 81044)
	_, err = c.DNS.Records.New(ctx, dns.RecordNewParams{ZoneID: cloudflare.F("ffffffffffffffffffffffffffffffff"), Body: txt("a", "b")})
	apiErr(t, err, http.StatusNotFound, 7003)
}

func TestRecordNames(t *testing.T) {
	_, c := setup(t)
	for in, want := range map[string]string{
		"@":                 "example.com",
		"WWW":               "www.example.com",
		"api.example.com.":  "api.example.com",
		"x.Example.COM":     "x.example.com",
		"app.example.org":   "app.example.org.example.com",
		"*.wild":            "*.wild.example.com",
		"_acme-challenge.a": "_acme-challenge.a.example.com",
	} {
		rec, err := create(c, txt(in, "v"))
		check(t, err)
		if rec.Name != want {
			t.Errorf("name %q stored as %q, want %q", in, rec.Name, want)
		}
	}
	for _, bad := range []string{"", "a..b", "a b", "x.*.y"} {
		_, err := create(c, txt(bad, "v"))
		apiErr(t, err, http.StatusBadRequest, 9000)
	}
}

func TestCNAMEExclusivity(t *testing.T) {
	f, c := setup(t)
	ctx := context.Background()
	check(t, firstErr(create(c, aRec("a", "192.0.2.1"))))
	check(t, firstErr(create(c, txt("t", "hello"))))
	cn, err := create(c, cname("c", "target.example.net", true))
	check(t, err)

	for name, tc := range map[string]struct {
		body dns.RecordNewParamsBodyUnion
		code int64
	}{
		"CNAME over A":       {cname("a", "target.example.net", false), 81053},
		"CNAME over TXT":     {cname("t", "target.example.net", false), 81053},
		"CNAME over CNAME":   {cname("c", "elsewhere.example.net", false), 81053},
		"A over CNAME":       {aRec("c", "192.0.2.2"), 81054},
		"TXT over CNAME":     {txt("c", "hello"), 81054},
		"identical A":        {aRec("a", "192.0.2.1"), 81058},
		"identical TXT":      {txt("t", "hello"), 81058},
		"identical CNAME":    {cname("C.example.com", "target.example.net", true), 81058},
		"A with bad address": {aRec("x", "192.0.2"), 9005},
	} {
		_, err := create(c, tc.body)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		apiErr(t, err, http.StatusBadRequest, tc.code)
	}
	// Records that may share a name do.
	check(t, firstErr(create(c, aRec("a", "192.0.2.9"))))
	check(t, firstErr(create(c, txt("t", "second"))))
	check(t, firstErr(create(c, txt("a", "alongside an A"))))

	// An edit that would turn the A into a CNAME is refused the same way.
	var aID string
	for _, r := range f.Records(zoneID) {
		if r.Type == "A" {
			aID = r.ID
		}
	}
	_, err = c.DNS.Records.Edit(ctx, aID, dns.RecordEditParams{ZoneID: zoneF, Body: dns.CNAMERecordParam{
		Type: cloudflare.F(dns.CNAMERecordTypeCNAME), Content: cloudflare.F("x.example.net")}})
	apiErr(t, err, http.StatusBadRequest, 81053)
	// A record may be updated in place without conflicting with itself.
	_, err = c.DNS.Records.Update(ctx, cn.ID, dns.RecordUpdateParams{ZoneID: zoneF, Body: cname("c", "new.example.net", true)})
	check(t, err)
	if n := len(f.Records(zoneID)); n != 6 {
		t.Fatalf("%d records, want 6", n)
	}
}

func TestRecordValidation(t *testing.T) {
	f, c := setup(t)
	proxiedTXT := txt("t", "v")
	proxiedTXT.Proxied = cloudflare.F(true)
	shortTTL := txt("t", "v")
	shortTTL.TTL = cloudflare.F(dns.TTL(30))
	noTTL := txt("t", "v")
	noTTL.TTL = cloudflare.F[dns.TTL](0)
	noTTL.TTL.Present = false
	for name, tc := range map[string]struct {
		body dns.RecordNewParamsBodyUnion
		code int64
	}{
		"proxied TXT":   {proxiedTXT, 9004},
		"TTL 30":        {shortTTL, 9021},
		"TTL missing":   {noTTL, 9021},
		"bad AAAA":      {dns.AAAARecordParam{Name: cloudflare.F("v6"), Type: cloudflare.F(dns.AAAARecordTypeAAAA), Content: cloudflare.F("192.0.2.1"), TTL: cloudflare.F(dns.TTL1)}, 9006},
		"CNAME to self": {cname("self", "self.example.com", false), 9007},
	} {
		_, err := create(c, tc.body)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		apiErr(t, err, http.StatusBadRequest, tc.code)
	}
	if n := len(f.Records(zoneID)); n != 0 {
		t.Fatalf("refused creates left %d records", n)
	}
	// A proxied record's TTL is automatic whatever was asked.
	p := aRec("p", "192.0.2.7")
	p.Proxied = cloudflare.F(true)
	rec, err := create(c, p)
	check(t, err)
	if rec.TTL != 1 {
		t.Fatalf("proxied record TTL = %v", rec.TTL)
	}
}

// TestRequestShapes pins the JSON cloudflare-go sends (keys sorted, ttl an
// integer, unset fields absent), which the fake's decoding relies on.
func TestRequestShapes(t *testing.T) {
	f, c := setup(t)
	check(t, firstErr(create(c, txt("_gw.app", `"owner=gw"`))))
	check(t, firstErr(create(c, cname("app", tunnelID+".cfargotunnel.com", true))))
	calls := f.Calls()
	want := []string{
		`{"content":"\"owner=gw\"","name":"_gw.app","ttl":1,"type":"TXT"}`,
		`{"content":"` + tunnelID + `.cfargotunnel.com","name":"app","proxied":true,"ttl":1,"type":"CNAME"}`,
	}
	for i, w := range want {
		if got := string(calls[i].Body); got != w {
			t.Errorf("request %d body\n got %s\nwant %s", i, got, w)
		}
	}
	if got := f.Records(zoneID)[0].Content; got != `"owner=gw"` {
		t.Errorf("TXT content stored as %q", got)
	}
}

func TestRecordListing(t *testing.T) {
	f, c := setup(t)
	ctx := context.Background()
	for i := range 12 {
		f.AddRecord(zoneID, cffake.Record{Type: "TXT", Name: fmt.Sprintf("t%02d", i), Content: fmt.Sprintf("v%d", i%3)})
	}
	f.AddRecord(zoneID, cffake.Record{Type: "CNAME", Name: "app", Content: "t.example.net", Proxied: true})
	f.AddRecord(zoneID, cffake.Record{Type: "A", Name: "app2", Content: "192.0.2.1", TTL: 300})

	list := func(p dns.RecordListParams) []string {
		t.Helper()
		p.ZoneID = zoneF
		var out []string
		it := c.DNS.Records.ListAutoPaging(ctx, p)
		for it.Next() {
			out = append(out, it.Current().Name)
		}
		check(t, it.Err())
		return out
	}
	if got := list(dns.RecordListParams{PerPage: cloudflare.F(5.0)}); len(got) != 14 || got[0] != "app2.example.com" {
		t.Errorf("all records across pages, ordered by type = %v", got)
	}
	if got := list(dns.RecordListParams{Name: cloudflare.F(dns.RecordListParamsName{Exact: cloudflare.F("APP.example.com")})}); !slices.Equal(got, []string{"app.example.com"}) {
		t.Errorf("name.exact = %v", got)
	}
	if got := list(dns.RecordListParams{Type: cloudflare.F(dns.RecordListParamsTypeTXT), Content: cloudflare.F(dns.RecordListParamsContent{Exact: cloudflare.F("v1")})}); len(got) != 4 {
		t.Errorf("type+content.exact = %v", got)
	}
	if got := list(dns.RecordListParams{Type: cloudflare.F(dns.RecordListParamsTypeCNAME), Content: cloudflare.F(dns.RecordListParamsContent{Exact: cloudflare.F("v1")}),
		Match: cloudflare.F(dns.RecordListParamsMatchAny)}); len(got) != 5 {
		t.Errorf("match=any = %v", got)
	}
	if got := list(dns.RecordListParams{Proxied: cloudflare.F(true)}); !slices.Equal(got, []string{"app.example.com"}) {
		t.Errorf("proxied = %v", got)
	}
	if got := list(dns.RecordListParams{Name: cloudflare.F(dns.RecordListParamsName{Startswith: cloudflare.F("t1")})}); len(got) != 2 {
		t.Errorf("name.startswith = %v", got)
	}
	// The legacy name= alias, as a raw query.
	page, err := c.DNS.Records.List(ctx, dns.RecordListParams{ZoneID: zoneF}, option.WithQuery("name", "app2.example.com"))
	check(t, err)
	if len(page.Result) != 1 || page.Result[0].Content != "192.0.2.1" || page.Result[0].TTL != 300 {
		t.Errorf("name= = %s", page.JSON.RawJSON())
	}
}

func TestConcurrentWrites(t *testing.T) {
	f, c := setup(t)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Go(func() {
			_, err := create(c, txt(fmt.Sprintf("n%d", i%20), "same"))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	var ok, dup int
	for err := range errs {
		if err == nil {
			ok++
		} else {
			apiErr(t, err, http.StatusBadRequest, 81058)
			dup++
		}
	}
	if ok != 20 || dup != 20 || len(f.Records(zoneID)) != 20 {
		t.Fatalf("ok=%d dup=%d records=%d, want 20/20/20", ok, dup, len(f.Records(zoneID)))
	}
}

func firstErr[T any](_ T, err error) error { return err }

// A visitor's hostname reaches the tunnel its proxied CNAME names, exactly
// or through the wildcard one label up; anything else reaches none.
func TestResolveTunnel(t *testing.T) {
	f, _ := setup(t)
	f.AddRecord(zoneID, cffake.Record{Type: "CNAME", Name: "app.example.com", Content: "t-app.cfargotunnel.com", Proxied: true})
	f.AddRecord(zoneID, cffake.Record{Type: "CNAME", Name: "*.example.com", Content: "t-wild.cfargotunnel.com", Proxied: true})
	f.AddRecord(zoneID, cffake.Record{Type: "CNAME", Name: "dns-only.example.com", Content: "t-x.cfargotunnel.com"})
	f.AddRecord(zoneID, cffake.Record{Type: "CNAME", Name: "elsewhere.example.com", Content: "origin.example.net", Proxied: true})
	for host, want := range map[string]string{
		"app.example.com":        "t-app",
		"APP.example.com.":       "t-app",
		"other.example.com":      "t-wild",
		"dns-only.example.com":   "", // its own record answers, unproxied
		"elsewhere.example.com":  "",
		"a.b.example.com":        "",
		"example.com":            "",
		"app.example.com.evil.x": "",
	} {
		got, ok := f.ResolveTunnel(host)
		if got != want || ok != (want != "") {
			t.Errorf("ResolveTunnel(%q) = %q, %v; want %q", host, got, ok, want)
		}
	}
}
